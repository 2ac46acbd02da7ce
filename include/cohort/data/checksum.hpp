// Content checksums for data files: XXH3-64 over the bytes, written "xxh3-64:<16 hex digits>".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cohort::data {

// Streams the file; throws IoError when it cannot be read.
std::string file_checksum(const std::string& path);
std::string format_checksum(std::uint64_t hash);

}  // namespace cohort::data
