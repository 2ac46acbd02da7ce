// The exclusion decision after a failed step: which failed nodes join the job's excluded list
// under slurm.max_excluded_nodes (the libslurm side is exercised by slurm.node_failure_requeue).
#include <boost/test/unit_test.hpp>

#include <map>
#include <string>

#include "cohort/env/environment.hpp"
#include "cohort/error.hpp"
#include "cohort/slurm/failure_requeue.hpp"
#include "cohort/slurm/job.hpp"
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

// The job's identity has one reader (env::read_slurm_job); current_job() builds on it, from an
// injected environment.
BOOST_AUTO_TEST_CASE(the_job_identity_comes_from_the_one_reader) {
  using Vars = std::map<std::string, std::string>;
  const auto env_of = [](Vars vars) { return cohort::env::Environment(std::move(vars)); };
  const auto outside = cohort::slurm::current_job(env_of(Vars{{"HOME", "/root"}}));
  BOOST_TEST(!outside.in_job);
  const auto job = cohort::slurm::current_job(env_of(Vars{
      {"SLURM_JOB_ID", "41"}, {"SLURM_RESTART_COUNT", "2"}, {"SLURM_JOB_NODELIST", "n[1-2]"}}));
  BOOST_TEST(job.in_job);
  BOOST_TEST(job.job_id == "41");
  BOOST_TEST(job.target == "41");
  BOOST_TEST(job.restart_count == 2);
  const auto task = cohort::slurm::current_job(
      env_of({{"SLURM_JOB_ID", "43"}, {"SLURM_ARRAY_JOB_ID", "40"}, {"SLURM_ARRAY_TASK_ID", "3"}}));
  BOOST_TEST(task.target == "40_3");
  BOOST_TEST(task.restart_count == 0);
  // Half an array, or a restart count that is not a count, is an environment error, not a guess.
  BOOST_CHECK_THROW(cohort::slurm::current_job(
                        env_of(Vars{{"SLURM_JOB_ID", "43"}, {"SLURM_ARRAY_JOB_ID", "40"}})),
                    cohort::EnvironmentError);
  BOOST_CHECK_THROW(cohort::slurm::current_job(
                        env_of(Vars{{"SLURM_JOB_ID", "43"}, {"SLURM_RESTART_COUNT", "x"}})),
                    cohort::EnvironmentError);
}

BOOST_AUTO_TEST_CASE(a_lost_rank_is_any_exit_that_is_not_cohorts_own) {
  using cohort::slurm::lost_rank_exit;
  for (const int code : {76, 77, 137, 134, 139, 14, 255}) BOOST_TEST(lost_rank_exit(code), code);
  for (const int code : {0, 1, 2, 3, 4, 75}) BOOST_TEST(!lost_rank_exit(code), code);
}

BOOST_AUTO_TEST_SUITE_END()
