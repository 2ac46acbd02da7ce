// The restart budgets per cause (preemption, failure, pre-flight) and the crash-loop decision, on a
// real ledger file; the requeue itself (libslurm) is exercised by the slurm.* tests.
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "cohort/error.hpp"
#include "cohort/slurm/job.hpp"
#include "cohort/slurm/restart_ledger.hpp"

namespace slurm = cohort::slurm;
using slurm::RestartCause;

namespace {

struct LedgerDir {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("cohort-ledger-" + std::to_string(::getpid()));
  LedgerDir() { std::filesystem::create_directories(dir); }
  ~LedgerDir() { std::filesystem::remove_all(dir); }
  std::string path() const { return slurm::ledger_path(dir.string()); }
  void write(const std::string& text) const { std::ofstream(path()) << text; }
};

slurm::JobIdentity job(int restarts) {
  slurm::JobIdentity j;
  j.in_job = true;
  j.job_id = j.target = "12";
  j.restart_count = restarts;
  return j;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(slurm_restart_ledger)

BOOST_AUTO_TEST_CASE(a_missing_ledger_or_another_jobs_starts_from_zero) {
  LedgerDir d;
  auto ledger = slurm::RestartLedger::load(d.path(), "12");
  BOOST_TEST(ledger.failures == 0);
  ledger.record(RestartCause::kFailure, slurm::FailurePoint{"step-00000300", 350});
  ledger.record(RestartCause::kPreflight, std::nullopt);
  ledger.save(d.path());
  const auto again = slurm::RestartLedger::load(d.path(), "12");
  BOOST_TEST(again.failures == 1);
  BOOST_TEST(again.preflight_requeues == 1);
  BOOST_TEST(again.preemptions == 0);
  BOOST_REQUIRE(again.last_failure.has_value());
  BOOST_TEST(again.last_failure->checkpoint == "step-00000300");
  BOOST_TEST(again.last_failure->step == 350);
  const auto other = slurm::RestartLedger::load(d.path(), "13");
  BOOST_TEST(other.failures == 0);
  BOOST_TEST(!other.last_failure.has_value());
}

BOOST_AUTO_TEST_CASE(a_preemption_clears_the_last_failure) {
  slurm::RestartLedger ledger;
  ledger.record(RestartCause::kFailure, slurm::FailurePoint{"step-00000300", 350});
  ledger.record(RestartCause::kPreemption, std::nullopt);
  BOOST_TEST(!ledger.last_failure.has_value());
  BOOST_TEST(ledger.preemptions == 1);
}

BOOST_AUTO_TEST_CASE(a_bad_ledger_is_an_input_error_naming_the_field) {
  LedgerDir d;
  const std::pair<const char*, const char*> cases[] = {
      {"[1]", "not a JSON object"},
      {"{\"failures\": 1}", "field 'job'"},
      {"{\"job\": \"12\", \"failures\": -4}", "field 'failures'"},
      {"{\"job\": \"12\", \"preemptions\": 1e30}", "field 'preemptions'"},
      {"{\"job\": \"12\", \"last_failure\": {\"step\": 3}}", "field 'last_failure'"},
      {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "nested"},
  };
  for (const auto& [text, field] : cases) {
    d.write(text);
    BOOST_CHECK_EXCEPTION(
        slurm::RestartLedger::load(d.path(), "12"), cohort::IoError, [&](const cohort::IoError& e) {
          const std::string what = e.what();
          return what.find(d.path()) != std::string::npos && what.find(field) != std::string::npos;
        });
  }
}

BOOST_AUTO_TEST_CASE(crash_loop_is_the_same_checkpoint_twice) {
  const slurm::FailurePoint before{"step-00000300", 350};
  BOOST_TEST(!slurm::crash_loop(std::nullopt, before));
  BOOST_TEST(slurm::crash_loop(before, slurm::FailurePoint{"step-00000300", 350}));
  BOOST_TEST(slurm::crash_loop(before, slurm::FailurePoint{"step-00000300", 320}));
  BOOST_TEST(slurm::crash_loop(before, slurm::FailurePoint{"step-00000300", 380}));
  BOOST_TEST(!slurm::crash_loop(before, slurm::FailurePoint{"step-00000400", 350}));
  BOOST_TEST(slurm::crash_loop(slurm::FailurePoint{"", 5}, slurm::FailurePoint{"", 5}));
}

// Decisions only (act = false: no libslurm call): each cause spends its own budget.
BOOST_AUTO_TEST_CASE(each_cause_has_its_own_budget) {
  LedgerDir d;
  slurm::RestartLedger ledger;
  ledger.job = "12";
  ledger.failures = 3;
  ledger.preemptions = 40;
  ledger.save(d.path());
  slurm::RestartBudgets b;
  b.ledger = d.path();
  const auto failure = slurm::requeue_within_budget(job(43), b, RestartCause::kFailure, false);
  BOOST_TEST(!failure.requeued);
  BOOST_TEST(failure.text ==
             "failure budget spent (3/3 failures, slurm.max_failures): not requeueing job 12");
  const auto preemption =
      slurm::requeue_within_budget(job(43), b, RestartCause::kPreemption, false);
  BOOST_TEST(preemption.requeued);
  BOOST_TEST(preemption.text == "requeued job 12 (preemption 41, no limit)");
  const auto preflight = slurm::requeue_within_budget(job(43), b, RestartCause::kPreflight, false);
  BOOST_TEST(preflight.text == "requeued job 12 (pre-flight requeue 1/2)");
  b.max_restarts = 43;
  const auto capped = slurm::requeue_within_budget(job(43), b, RestartCause::kPreemption, false);
  BOOST_TEST(!capped.requeued);
  BOOST_TEST(capped.text.find("slurm.max_restarts") != std::string::npos);
  b.max_preemptions = 40;
  b.max_restarts = -1;
  BOOST_TEST(!slurm::requeue_within_budget(job(43), b, RestartCause::kPreemption, false).requeued);
  slurm::JobIdentity outside;
  BOOST_TEST(slurm::requeue_within_budget(outside, b, RestartCause::kFailure, false).text ==
             "stopping to be resumed (exit code 75)");
}

// A restart in the allocation (slurm.spare_nodes) spends the failure budget as a requeue does,
// and counts beside SLURM_RESTART_COUNT under slurm.max_restarts; the ledger keeps both, and the
// step's node count, across a save; a ledger from before spares reads them as 0.
BOOST_AUTO_TEST_CASE(a_restart_in_the_allocation_spends_the_same_budgets) {
  LedgerDir d;
  slurm::RestartBudgets b;
  b.ledger = d.path();
  const slurm::FailurePoint at{"step-00000200", 212};
  const auto first = slurm::restart_within_budget(job(0), b, /*act=*/true, at);
  BOOST_TEST(first.requeued);
  BOOST_TEST(first.text == "restarting in job 12 (failure 1/3)");
  auto ledger = slurm::RestartLedger::load(d.path(), "12");
  BOOST_TEST(ledger.failures == 1);
  BOOST_TEST(ledger.in_allocation == 1);
  BOOST_REQUIRE(ledger.last_failure.has_value());
  BOOST_TEST(ledger.last_failure->checkpoint == "step-00000200");
  ledger.step_nodes = 3;
  ledger.save(d.path());
  BOOST_TEST(slurm::RestartLedger::load(d.path(), "12").step_nodes == 3);
  // The next failure: a requeue would say the same count.
  BOOST_TEST(slurm::requeue_within_budget(job(0), b, RestartCause::kFailure, false).text ==
             "requeued job 12 (failure 2/3)");
  BOOST_TEST(slurm::restart_within_budget(job(0), b, false, at).text ==
             "restarting in job 12 (failure 2/3)");
  b.max_restarts = 2;  // SLURM_RESTART_COUNT 1 + 1 in the allocation
  const auto capped = slurm::restart_within_budget(job(1), b, false, at);
  BOOST_TEST(!capped.requeued);
  BOOST_TEST(capped.text ==
             "restart budget spent (2/2 restarts, slurm.max_restarts): not restarting job 12");
  BOOST_TEST(!slurm::requeue_within_budget(job(1), b, RestartCause::kPreemption, false).requeued);
  b.max_restarts = -1;
  b.max_failures = 1;
  BOOST_TEST(slurm::restart_within_budget(job(0), b, false, at).text ==
             "failure budget spent (1/1 failures, slurm.max_failures): not restarting job 12");
  d.write("{\"job\": \"12\", \"failures\": 2}");
  BOOST_TEST(slurm::RestartLedger::load(d.path(), "12").in_allocation == 0);
  d.write("{\"job\": \"12\", \"in_allocation\": \"1\"}");
  BOOST_CHECK_THROW(slurm::RestartLedger::load(d.path(), "12"), cohort::IoError);
}

BOOST_AUTO_TEST_SUITE_END()
