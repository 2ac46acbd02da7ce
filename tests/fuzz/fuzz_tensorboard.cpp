// Fuzz target: an event file as a resumed run's TensorBoard writer cuts it (cut_events_after,
// src/monitor/tensorboard.cpp): each record's length and its masked CRC-32C, the data's CRC, the
// Event parsed (protobuf) and its step. Bytes 0-7 are the step resumed from (int64,
// little-endian), the rest is the file. A file with no event record at its start is left
// byte for byte as it was (-1); otherwise the file becomes a prefix of itself that a second cut
// at the same step keeps whole, with the same number of records.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "fuzz_contract.hpp"
#include "monitor/tensorboard.hpp"

namespace {

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return 0;
  std::int64_t step = 0;
  std::memcpy(&step, data, sizeof step);
  const std::string file(reinterpret_cast<const char*>(data) + 8, size - 8);
  static const std::string event_file = cohort::fuzz::scratch_path("tensorboard", ".cohort");
  cohort::fuzz::write_scratch(event_file, file.data(), file.size());
  cohort::fuzz::expect_contract([&] {
    const std::int64_t kept = cohort::monitor::cut_events_after(event_file, step);
    const std::string cut = contents(event_file);
    if (kept < 0) {
      if (kept != -1 || cut != file) std::abort();  // not an event file: left alone
      return;
    }
    if (cut.size() > file.size() || file.compare(0, cut.size(), cut) != 0) std::abort();
    if ((kept == 0) != cut.empty()) std::abort();  // at least 16 bytes a record
    if (cohort::monitor::cut_events_after(event_file, step) != kept ||
        contents(event_file) != cut) {
      std::abort();
    }
  });
  return 0;
}
