// Content checksums for data files: XXH3-64 over the bytes, written "xxh3-64:<16 hex digits>".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cohort::data {

// Streams the file; throws IoError when it cannot be read.
std::string file_checksum(const std::string& path);
std::string format_checksum(std::uint64_t hash);

// Size in bytes; throws IoError naming the file when it cannot be read.
std::int64_t file_bytes(const std::string& path);

// mkdir -p; throws IoError naming the directory.
void make_directories(const std::string& path);

}  // namespace cohort::data
