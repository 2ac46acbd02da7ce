// Slurm's RPC window: which libslurm releases may talk to which slurmctld (the decision behind the
// one-line refusal before Cohort relies on libslurm; the RPC side runs in the slurm tests, where
// the local cluster's controller is the linked release).
#include <boost/test/unit_test.hpp>

#include <string>

#include "cohort/slurm/version.hpp"

using cohort::slurm::check_rpc_window;
using cohort::slurm::parse_release;

BOOST_AUTO_TEST_SUITE(slurm_version)

BOOST_AUTO_TEST_CASE(parses_what_slurm_prints) {
  const auto r = parse_release("24.11.5");
  BOOST_REQUIRE(r);
  BOOST_TEST(r->year == 24);
  BOOST_TEST(r->month == 11);
  BOOST_TEST(r->micro == 5);
  BOOST_TEST(parse_release("slurm 22.05.8")->micro == 8);
  BOOST_TEST(parse_release("23.11.4-1")->month == 11);
  BOOST_TEST(parse_release("23.02")->micro == 0);
  BOOST_TEST(!parse_release(""));
  BOOST_TEST(!parse_release("24"));
  BOOST_TEST(!parse_release("24.13.1"));
  BOOST_TEST(!parse_release("24.11.x"));
  BOOST_TEST(!parse_release("24.11.1abc"));
  BOOST_TEST(cohort::slurm::to_string(*parse_release("24.5.1")) == "24.05.1");
}

BOOST_AUTO_TEST_CASE(same_release_and_older_clients_within_two_before_24_11) {
  BOOST_TEST(check_rpc_window("22.05.8", "22.05.11").compatible);
  BOOST_TEST(check_rpc_window("22.05.8", "22.05.8").message.empty());
  BOOST_TEST(check_rpc_window("22.05.8", "23.02.1").compatible);
  BOOST_TEST(check_rpc_window("22.05.8", "23.11.4").compatible);   // two back
  BOOST_TEST(!check_rpc_window("22.05.8", "24.05.1").compatible);  // three back, 24.05: two
  BOOST_TEST(!check_rpc_window("21.08.8", "23.11.0").compatible);
}

BOOST_AUTO_TEST_CASE(three_back_from_24_11_and_the_six_monthly_releases) {
  BOOST_TEST(check_rpc_window("23.11.10", "24.11.5").compatible);
  BOOST_TEST(check_rpc_window("23.02.7", "24.11.5").compatible);   // three back
  BOOST_TEST(!check_rpc_window("22.05.8", "24.11.5").compatible);  // four back
  BOOST_TEST(check_rpc_window("24.05.1", "25.11.0").compatible);   // 24.05, 24.11, 25.05, 25.11
  BOOST_TEST(!check_rpc_window("23.11.1", "25.11.0").compatible);
  BOOST_TEST(check_rpc_window("25.11.2", "26.05.0").compatible);  // counted by rule
}

BOOST_AUTO_TEST_CASE(a_client_newer_than_the_controller_is_refused_naming_both) {
  const auto check = check_rpc_window("24.11.5", "22.05.8");
  BOOST_TEST(!check.compatible);
  BOOST_TEST(check.message.find("24.11.5") != std::string::npos);
  BOOST_TEST(check.message.find("22.05.8") != std::string::npos);
  BOOST_TEST(check.message.find("accepts clients from 20.11 to 22.05") != std::string::npos,
             check.message);
  BOOST_TEST(check.message.find('\n') == std::string::npos);
  BOOST_TEST(!check_rpc_window("24.11.0", "24.05.9").compatible);
}

BOOST_AUTO_TEST_CASE(unknown_releases_are_said_not_judged) {
  const auto odd_month = check_rpc_window("24.11.5", "25.08.0");
  BOOST_TEST(odd_month.compatible);
  BOOST_TEST(odd_month.message.find("not checked") != std::string::npos);
  BOOST_TEST(check_rpc_window("24.11.5", "unknown").compatible);
  BOOST_TEST(!check_rpc_window("24.11.5", "unknown").message.empty());
}

BOOST_AUTO_TEST_CASE(the_linked_library_is_a_release_this_build_knows) {
  const auto linked = parse_release(cohort::slurm::library_release());
  BOOST_REQUIRE(linked);
  BOOST_TEST(check_rpc_window(cohort::slurm::library_release(), cohort::slurm::library_release())
                 .message.empty());
}

BOOST_AUTO_TEST_SUITE_END()
