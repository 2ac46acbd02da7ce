// The contract every fuzz target checks (docs/exit-codes.md): a reader given any bytes either
// succeeds or throws a cohort::Error whose exit code is a documented input error (2 or 3). An
// internal error (exit 1), any other exception, a crash, a sanitizer report, a hang (libFuzzer's
// -timeout) or an allocation beyond -rss_limit_mb is a finding.
#pragma once

#include <unistd.h>
#include <cstdio>
#include <cstdlib>

#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "cohort/error.hpp"

namespace cohort::fuzz {

// A scratch path of this fuzzer process, for readers that take a file by name:
// <tmp>/cohort-fuzz-<name>-<pid><suffix>.
inline std::string scratch_path(const std::string& name, const std::string& suffix = "") {
  return std::filesystem::temp_directory_path().string() + "/cohort-fuzz-" + name + "-" +
         std::to_string(::getpid()) + suffix;
}

// The file at `path` replaced by `size` bytes (the input under test).
inline void write_scratch(const std::string& path, const void* bytes, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(size));
}

template <typename Body>
void expect_contract(Body&& body) {
  try {
    body();
  } catch (const Error& e) {
    if (e.exit_code() == ExitCode::kUsage || e.exit_code() == ExitCode::kInput) return;
    std::fprintf(stderr, "fuzz: error outside the contract (exit %d): %s\n",
                 static_cast<int>(e.exit_code()), e.what());
    std::abort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: exception outside cohort::Error: %s\n", e.what());
    std::abort();
  }
}

}  // namespace cohort::fuzz
