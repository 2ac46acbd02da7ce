// Content checksums of files: XXH3-64 over the bytes, written "xxh3-64:<16 hex digits>" wherever
// Cohort records one (dataset attributes, checkpoint manifests, the config hash).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace cohort::io {

std::string format_checksum(std::uint64_t hash);
// Whether `text` is "xxh3-64:<16 lower-case hex digits>", what format_checksum() writes.
bool is_checksum(const std::string& text);
// The hash of a "xxh3-64:<16 lower-case hex digits>" text; IoError quoting it otherwise.
std::uint64_t parse_checksum(const std::string& text);
// "xxh3-64:<16 hex digits>" of the bytes.
std::string bytes_checksum(const void* data, std::size_t bytes);

// bytes_checksum() of bytes that arrive in pieces (the same result as of them all at once).
class StreamingChecksum {
 public:
  StreamingChecksum();  // throws IoError when xxhash cannot allocate its state
  ~StreamingChecksum();
  StreamingChecksum(const StreamingChecksum&) = delete;
  StreamingChecksum& operator=(const StreamingChecksum&) = delete;
  void add(const void* data, std::size_t bytes);
  std::string result() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Streams the file; throws IoError when it cannot be read.
std::string file_checksum(const std::string& path);

}  // namespace cohort::io
