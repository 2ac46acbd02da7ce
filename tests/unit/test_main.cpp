// Unit test runner: Boost's own main, but for the exit code. A case that cannot check its claim
// here calls cohort::test::skip, and the program then exits 79 (CTest's Skipped) when nothing
// failed (tests/test_skip.hpp).
#define BOOST_TEST_MODULE cohort unit tests
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>

#include "test_skip.hpp"

int main(int argc, char* argv[]) {
  return cohort::test::exit_code(boost::unit_test::unit_test_main(&init_unit_test, argc, argv));
}
