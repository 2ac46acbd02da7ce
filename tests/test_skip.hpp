// Skips of Boost test cases that CTest sees (issue 49). A case that cannot check its claim where
// it runs (no GPU for NCCL, a guard that would make its comparison compare a thing with itself)
// calls skip(what, why) and returns. The log says "SKIPPED <what>: <why>" (at --log_level=message
// or finer), and the test program's main (tests/unit/test_main.cpp, tests/mpi/test_main.cpp)
// turns Boost's result into the exit code through exit_code(): a failure stays a failure; a run
// in which nothing failed but a case skipped ends with one "SKIP: ..." line and exit code 79, the
// suite's SKIP_RETURN_CODE (cmake/CohortTesting.cmake), which CTest reports as Skipped.
// Boost.Test alone has no such exit code: a case that returns early passes, and its own skips
// (failed preconditions) end the program as a pass or a failure, never as a skip.
// So a CTest test that runs a skipping case should select only cases that skip together: what
// still checks something where they skip is registered as a test of its own.
// Never 77: that is cohort's "peer lost" exit code, and a skip must not look like it.
#pragma once

#include <boost/test/unit_test.hpp>
#include <iostream>
#include <string>
#include <vector>

namespace cohort::test {

inline constexpr int kSkipExitCode = 79;

// One skip: what was not checked (the same on every rank of a collective case) and why (which
// may name this rank).
struct Skip {
  std::string what, why;
};

// Every skip() in this process, in the order the cases ran.
inline std::vector<Skip>& skipped() {
  static std::vector<Skip> list;
  return list;
}

inline void skip(const std::string& what, const std::string& why) {
  BOOST_TEST_MESSAGE("SKIPPED " << what << ": " << why);
  skipped().push_back({what, why});
}

// The program's exit code from unit_test_main's: non-zero (a failure, or a setup error such as a
// --run_test that selects nothing) as it is; 0 with a skip in this process: 79, after one line
// naming what was not checked and why.
inline int exit_code(int boost_result) {
  if (boost_result != 0 || skipped().empty()) return boost_result;
  std::cout << "SKIP: " << skipped().front().what << ": " << skipped().front().why;
  if (skipped().size() > 1) {
    std::cout << " (and " << skipped().size() - 1 << " more test case(s): SKIPPED in the log)";
  }
  std::cout << std::endl;
  return kSkipExitCode;
}

}  // namespace cohort::test
