// Content checksums of files: XXH3-64 over the bytes, written "xxh3-64:<16 hex digits>" wherever
// Cohort records one (dataset attributes, checkpoint manifests, the config hash).
#pragma once

#include <cstdint>
#include <string>

namespace cohort::io {

std::string format_checksum(std::uint64_t hash);
// The hash of a "xxh3-64:<16 lower-case hex digits>" text; IoError quoting it otherwise.
std::uint64_t parse_checksum(const std::string& text);
// Streams the file; throws IoError when it cannot be read.
std::string file_checksum(const std::string& path);

}  // namespace cohort::io
