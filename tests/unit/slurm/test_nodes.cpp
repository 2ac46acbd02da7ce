// The exclusion decision after a failed step: which failed nodes join the job's excluded list
// under slurm.max_excluded_nodes (the libslurm side is exercised by slurm.node_failure_requeue).
#include <boost/test/unit_test.hpp>

#include "cohort/slurm/nodes.hpp"

using cohort::slurm::FailedNode;
using cohort::slurm::plan_exclusion;
using Names = std::vector<std::string>;

BOOST_AUTO_TEST_SUITE(slurm_nodes)

BOOST_AUTO_TEST_CASE(adds_failed_nodes_in_order) {
  const auto plan = plan_exclusion({}, {{"n2", "not responding"}, {"n5", "down"}}, 2);
  BOOST_TEST(plan.added == (Names{"n2", "n5"}), boost::test_tools::per_element());
  BOOST_TEST(plan.list == (Names{"n2", "n5"}), boost::test_tools::per_element());
  BOOST_TEST(plan.refused.empty());
}

BOOST_AUTO_TEST_CASE(keeps_what_was_excluded_and_does_not_repeat_it) {
  const auto plan = plan_exclusion({"n7", "n2"}, {{"n2", "down"}, {"n3", "draining"}}, 3);
  BOOST_TEST(plan.added == (Names{"n3"}), boost::test_tools::per_element());
  BOOST_TEST(plan.list == (Names{"n7", "n2", "n3"}), boost::test_tools::per_element());
  BOOST_TEST(plan.refused.empty());
}

BOOST_AUTO_TEST_CASE(refuses_past_the_limit) {
  const auto plan = plan_exclusion({"n7"}, {{"n2", "down"}, {"n3", "down"}}, 2);
  BOOST_TEST(plan.added == (Names{"n2"}), boost::test_tools::per_element());
  BOOST_TEST(plan.refused == (Names{"n3"}), boost::test_tools::per_element());
  BOOST_TEST(plan.list == (Names{"n7", "n2"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(zero_limit_excludes_nothing) {
  const auto plan = plan_exclusion({}, {{"n2", "down"}}, 0);
  BOOST_TEST(plan.added.empty());
  BOOST_TEST(plan.list.empty());
  BOOST_TEST(plan.refused == (Names{"n2"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
