// The contract every fuzz target checks (docs/exit-codes.md): a reader given any bytes either
// succeeds or throws a cohort::Error whose exit code is a documented input error (2 or 3). An
// internal error (exit 1), any other exception, a crash, a sanitizer report, a hang (libFuzzer's
// -timeout) or an allocation beyond -rss_limit_mb is a finding.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "cohort/error.hpp"

namespace cohort::fuzz {

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
