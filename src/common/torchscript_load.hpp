// Loading a TorchScript file that a user names (data.transform, model.file): one place for the
// checks before LibTorch reads it and for turning LibTorch's errors into one line. c10's messages
// carry a C++ backtrace after their first line; the TorchScript interpreter's end with the
// script's own error ("builtins.RuntimeError: ...") after its traceback.
#pragma once

#include <torch/csrc/jit/serialization/import.h>

#include <cstdint>
#include <string>

#include "cohort/error.hpp"
#include "cohort/io/input.hpp"

namespace cohort::torchscript {

// A TorchScript file larger than this is refused before LibTorch reads it into memory.
constexpr std::int64_t kMaxFileBytes = std::int64_t{4} << 30;

inline std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

inline std::string last_line(const std::string& text) {
  const auto end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return text;
  const auto newline = text.rfind('\n', end);
  const auto start = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(start, end + 1 - start);
}

// Loads `path` on the CPU; `Err` (with `key`, the setting that named it) when it is not a regular
// file, is too large, or is not a TorchScript module with a forward().
template <typename Err>
torch::jit::Module load(const std::string& path, const std::string& key) {
  // Opened once and loaded through that descriptor: a FIFO does not block LibTorch's open, and
  // the error says what the path is when it is not a file (a directory, a dangling link).
  const auto file = io::InputFile::open<Err>(path, kMaxFileBytes, key);
  torch::jit::Module module;
  try {
    module = torch::jit::load(file.fd_path(), c10::Device(c10::kCPU));
  } catch (const c10::Error& e) {
    COHORT_THROW(Err, path, ": ", key, ": not a TorchScript module (",
                 first_line(e.what_without_backtrace()), ")");
  } catch (const std::exception& e) {
    COHORT_THROW(Err, path, ": ", key, ": not a TorchScript module (", first_line(e.what()), ")");
  }
  COHORT_CHECK(module.find_method("forward").has_value(), Err, path, ": ", key,
               ": the module has no forward()");
  return module;
}

}  // namespace cohort::torchscript
