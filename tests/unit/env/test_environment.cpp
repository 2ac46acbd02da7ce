#include <boost/test/unit_test.hpp>
#include <cstdlib>

#include "cohort/env/environment.hpp"
#include "cohort/error.hpp"

using cohort::env::Environment;
using Vars = std::map<std::string, std::string>;

BOOST_AUTO_TEST_SUITE(env_environment)

BOOST_AUTO_TEST_CASE(reads_the_process_environment) {
  ::setenv("COHORT_TEST_VARIABLE", "a=b", 1);
  const auto env = Environment::from_process();
  BOOST_TEST(env.get("COHORT_TEST_VARIABLE").value_or("") == "a=b");
  ::unsetenv("COHORT_TEST_VARIABLE");
  BOOST_TEST(!Environment::from_process().has("COHORT_TEST_VARIABLE"));
}

BOOST_AUTO_TEST_CASE(integers_are_checked) {
  const Environment env(Vars{{"A", "12"}, {"B", "12x"}, {"C", ""}, {"D", "-3"}, {"E", " 4"}});
  BOOST_TEST(env.get_int("A").value_or(-1) == 12);
  BOOST_TEST(!env.get_int("MISSING").has_value());
  BOOST_CHECK_THROW(env.get_int("B"), cohort::EnvironmentError);
  BOOST_CHECK_THROW(env.get_int("C"), cohort::EnvironmentError);
  BOOST_CHECK_THROW(env.get_int("D"), cohort::EnvironmentError);  // below the default minimum 0
  BOOST_CHECK_THROW(env.get_int("E"), cohort::EnvironmentError);
  BOOST_TEST(env.get_int("D", -10, 10).value_or(0) == -3);
  BOOST_CHECK_THROW(env.get_int("A", 0, 10), cohort::EnvironmentError);
}

BOOST_AUTO_TEST_CASE(error_names_variable_and_value) {
  const Environment env(Vars{{"SLURM_NTASKS", "four"}});
  try {
    env.get_int("SLURM_NTASKS");
    BOOST_ERROR("no exception");
  } catch (const cohort::EnvironmentError& e) {
    BOOST_TEST(std::string(e.what()) ==
               "environment variable SLURM_NTASKS='four' is not an integer");
    BOOST_TEST(static_cast<int>(e.exit_code()) == 2);
  }
}

BOOST_AUTO_TEST_SUITE_END()
