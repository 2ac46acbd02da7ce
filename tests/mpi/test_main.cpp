// MPI test runner: every rank runs every test case; MPI lives for the whole process through one
// MpiSession made before the tests and ended after them (sessions made inside tests then neither
// init nor finalize).
//
// The exit code is the job's, decided on rank 0 once every rank's is known: a case that cannot
// check its claim calls cohort::test::skip (tests/test_skip.hpp), and the job exits 79 (CTest's
// Skipped) only when no rank failed and every rank skipped the very same cases. mpirun's exit code
// is the first non-zero one a rank returns, so no rank but 0 ever returns 79: a rank that failed
// returns its failure (and rank 0 one too), and ranks that disagree about what they skipped fail
// (the skip of a collective check on one rank alone would leave the check half done).
#define BOOST_TEST_MODULE cohort mpi tests
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>
#include <cstddef>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "mpi_fixture.hpp"
#include "test_skip.hpp"

namespace {
std::unique_ptr<cohort::comm::MpiSession> g_session;

// This rank's exit code from Boost's, with every rank's result and what it skipped (not why:
// the reasons may name the rank) gathered to rank 0.
int job_exit_code(int boost_result) {
  std::string mine = std::to_string(boost_result);
  for (const cohort::test::Skip& s : cohort::test::skipped()) mine += "\n" + s.what;
  const std::vector<std::string> ranks = g_session->gather_to_root(mine);
  if (g_session->rank() != 0) return boost_result;  // 0 or a failure, never 79
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const int code = std::stoi(ranks[r].substr(0, ranks[r].find('\n')));
    if (code != 0) {
      std::cout << "FAIL: rank " << r << " ended its tests with exit code " << code << std::endl;
      return boost_result != 0 ? boost_result : 1;
    }
  }
  for (std::size_t r = 1; r < ranks.size(); ++r) {
    if (ranks[r] != ranks[0]) {
      std::cout << "FAIL: rank " << r << " skipped other test cases than rank 0 (rank 0: "
                << cohort::test::skipped().size() << " skipped; SKIPPED lines in the log)"
                << std::endl;
      return 1;
    }
  }
  return cohort::test::exit_code(boost_result);  // 79 with its line when the ranks skipped alike
}
}  // namespace

const cohort::comm::MpiSession& cohort::test::session() { return *g_session; }

int main(int argc, char* argv[]) {
  try {
    g_session = std::make_unique<cohort::comm::MpiSession>(nullptr, nullptr);
    const int code = job_exit_code(boost::unit_test::unit_test_main(&init_unit_test, argc, argv));
    g_session.reset();
    return code;
  } catch (const std::exception& e) {
    std::cerr << "cohort mpi tests: " << e.what() << std::endl;
    return 1;
  }
}
