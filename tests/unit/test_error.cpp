#include <boost/test/unit_test.hpp>

#include "cohort/error.hpp"

BOOST_AUTO_TEST_SUITE(error)

BOOST_AUTO_TEST_CASE(check_throws_the_named_type_with_the_message) {
  int evaluated = 0;
  auto part = [&] {
    ++evaluated;
    return 42;
  };
  COHORT_CHECK(true, cohort::ConfigError, "never ", part());
  BOOST_TEST(evaluated == 0);  // message parts are evaluated only on failure
  try {
    COHORT_CHECK(1 + 1 == 3, cohort::ConfigError, "key ", "model.depth", " = ", part());
    BOOST_ERROR("no exception");
  } catch (const cohort::ConfigError& e) {
    BOOST_TEST(std::string(e.what()) == "key model.depth = 42");
  }
}

BOOST_AUTO_TEST_CASE(exit_codes_follow_the_documented_table) {
  BOOST_TEST(static_cast<int>(cohort::UsageError("x").exit_code()) == 2);
  BOOST_TEST(static_cast<int>(cohort::ConfigError("x").exit_code()) == 2);
  BOOST_TEST(static_cast<int>(cohort::EnvironmentError("x").exit_code()) == 2);
  BOOST_TEST(static_cast<int>(cohort::IoError("x").exit_code()) == 3);
  BOOST_TEST(static_cast<int>(cohort::TrainingError("x").exit_code()) == 4);
  BOOST_TEST(static_cast<int>(cohort::CommError("x").exit_code()) == 77);
  BOOST_TEST(static_cast<int>(cohort::DeviceError("x").exit_code()) == 78);
  BOOST_TEST(static_cast<int>(cohort::Error("x").exit_code()) == 1);
}

BOOST_AUTO_TEST_SUITE_END()
