// The supervision's decisions (ops/decisions.hpp) and the budget arithmetic under them, through
// their whole input space, each answer against a short reference written here: requeue or not for
// every exit code, the batch script's exit codes, the metrics.jsonl event, the pre-flight verdict,
// the kind of a training failure, the line of a stop for a signal; and slurm's budgets (a ledger-
// less requeue_within_budget, which reads no file and acts on nothing) over in_job x requeue x
// restart count x max_restarts x cause x the cause's budget.
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cohort/error.hpp"
#include "cohort/ops/decisions.hpp"
#include "cohort/ops/doctor.hpp"
#include "cohort/slurm/failure_requeue.hpp"
#include "cohort/slurm/job.hpp"
#include "cohort/slurm/restart_ledger.hpp"

namespace ops = cohort::ops;
namespace slurm = cohort::slurm;

namespace {

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

slurm::FailureRequeue outcome(bool requeued, bool crash_loop) {
  return {requeued, crash_loop, requeued ? "requeued job 1 (failure 1/3)" : "not requeued"};
}

ops::NodeReport node(const std::string& name, bool pass) {
  ops::NodeReport report{name, {}};
  for (const char* check : ops::kDoctorChecks) {
    report.checks.push_back({check, ops::CheckStatus::kPass, ""});
  }
  if (!pass) report.checks[2] = {"memory", ops::CheckStatus::kFail, "too little"};
  return report;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ops_requeue_decisions)

// Every exit code a step can end with: requeued when a rank was lost or its node failed, never
// for Cohort's own failures (1 internal, 2 usage, 3 input, 4 diverged), 0 or 75.
BOOST_AUTO_TEST_CASE(requeue_after_step_for_every_exit_code) {
  for (int code = 0; code <= 255; ++code) {
    const bool expected =
        code > 0 && code != 1 && code != 2 && code != 3 && code != 4 && code != 75;
    BOOST_TEST(ops::requeue_after_step(code) == expected, "exit code " << code);
  }
  for (const int lost : {76, 77, 78, 137, 14, 143}) BOOST_TEST(ops::requeue_after_step(lost));
}

BOOST_AUTO_TEST_CASE(the_batch_scripts_exit_codes) {
  for (int code = 0; code <= 255; ++code) {
    BOOST_TEST(ops::supervise_exit(code, std::nullopt) == code);
    BOOST_TEST(ops::supervise_exit(code, outcome(true, false)) == 0);
    BOOST_TEST(ops::supervise_exit(code, outcome(false, false)) == code);
    BOOST_TEST(ops::supervise_exit(code, outcome(false, true)) == code);
  }
  BOOST_TEST(ops::requeue_exit(outcome(true, false)) == 0);
  BOOST_TEST(ops::requeue_exit(outcome(false, false)) == 75);
  BOOST_TEST(ops::requeue_exit(outcome(false, true)) == 75);
}

BOOST_AUTO_TEST_CASE(the_event_a_requeue_attempt_records) {
  BOOST_TEST(std::string(ops::requeue_event(outcome(true, false))) == "requeue");
  BOOST_TEST(std::string(ops::requeue_event(outcome(false, true))) == "crash_loop");
  BOOST_TEST(std::string(ops::requeue_event(outcome(false, false))) == "step_failed");
  // The text plays no part: a user's --reason "crash loop: ..." is a failed step, not a loop.
  slurm::FailureRequeue said{false, false, "crash loop: said by the user"};
  BOOST_TEST(std::string(ops::requeue_event(said)) == "step_failed");
}

// Train without a report, or when every node passed (a slow network is said, not failed);
// requeue without the nodes that failed, with the doctor's code when the requeue did not happen.
BOOST_AUTO_TEST_CASE(the_preflight_verdict_and_its_exit_code) {
  BOOST_TEST((ops::decide_preflight(std::nullopt) == ops::PreflightVerdict::kTrain));
  ops::DoctorReport all_pass{{node("n1", true), node("n2", true)},
                             {"network", ops::CheckStatus::kPass, ""}};
  BOOST_TEST((ops::decide_preflight(all_pass) == ops::PreflightVerdict::kTrain));
  ops::DoctorReport slow_network = all_pass;
  slow_network.network = {"network", ops::CheckStatus::kFail, "1 GB/s below 10 GB/s"};
  BOOST_TEST((ops::decide_preflight(slow_network) == ops::PreflightVerdict::kTrain));
  ops::DoctorReport one_failing{{node("n1", true), node("n2", false)}, all_pass.network};
  BOOST_TEST((ops::decide_preflight(one_failing) == ops::PreflightVerdict::kRequeue));
  BOOST_TEST(ops::preflight_exit(outcome(true, false), one_failing) == 0);
  BOOST_TEST(ops::preflight_exit(outcome(false, false), one_failing) == 80 + 2);  // memory
}

// A node fault ends every rank with 78; LibTorch's configuration faults are the job's (exit 2);
// Cohort's own errors and anything else go on to main as they are.
BOOST_AUTO_TEST_CASE(the_kind_of_a_training_failure) {
  using K = ops::FailureKind;
  BOOST_TEST((ops::classify_failure(cohort::DeviceError("CUDA error: lost")) == K::kNodeFault));
  BOOST_TEST((ops::classify_failure(cohort::ConfigError("out of memory")) == K::kOther));
  BOOST_TEST((ops::classify_failure(cohort::IoError("x: truncated")) == K::kOther));
  BOOST_TEST((ops::classify_failure(std::runtime_error("CUDA out of memory. Tried to allocate")) ==
              K::kConfiguration));
  BOOST_TEST((ops::classify_failure(std::runtime_error("CUDA error: invalid device ordinal")) ==
              K::kConfiguration));
  BOOST_TEST((ops::classify_failure(std::runtime_error(
                  "CUDA error: uncorrectable ECC error encountered")) == K::kNodeFault));
  BOOST_TEST((ops::classify_failure(std::runtime_error("CUBLAS_STATUS_EXECUTION_FAILED")) ==
              K::kNodeFault));
  BOOST_TEST((ops::classify_failure(
                  std::runtime_error("CUDA error: device-side assert triggered")) == K::kOther));
  BOOST_TEST((ops::classify_failure(std::runtime_error("shape mismatch")) == K::kOther));
}

BOOST_AUTO_TEST_CASE(the_line_of_a_stop_for_a_signal) {
  BOOST_TEST(ops::come_back_line(SIGUSR1, 40, 120, "requeued job 12 (preemption 1, no limit)") ==
             "SIGUSR1 at step 40: checkpoint saved; requeued job 12 (preemption 1, no limit)");
  BOOST_TEST(ops::come_back_line(ops::kWallTime, 7, 300, "stopping to be resumed (exit code 75)") ==
             "time limit in 300 s or less at step 7: checkpoint saved; stopping to be resumed "
             "(exit code 75)");
}

// The budgets without a ledger (every restart counts against each budget) and without acting.
BOOST_AUTO_TEST_CASE(requeue_budgets_over_their_whole_space) {
  using slurm::RestartCause;
  const RestartCause causes[] = {RestartCause::kPreemption, RestartCause::kFailure,
                                 RestartCause::kPreflight};
  const char* nouns[] = {"preemption", "failure", "pre-flight requeue"};
  int cases = 0;
  for (const bool in_job : {false, true}) {
    for (const bool requeue : {false, true}) {
      for (int restarts = 0; restarts <= 4; ++restarts) {
        for (const int max_restarts : {-1, 0, 1, 3}) {
          for (int c = 0; c < 3; ++c) {
            for (const int budget : {-1, 0, 1, 3}) {
              slurm::JobIdentity job{in_job, "12", "12", restarts};
              slurm::RestartBudgets b;
              b.requeue = requeue;
              b.max_restarts = max_restarts;
              b.max_preemptions = b.max_failures = b.max_preflight_requeues = budget;
              const auto got = slurm::requeue_within_budget(job, b, causes[c], /*act=*/false);
              std::string prefix;
              bool expected = false;
              if (!in_job || !requeue) {
                prefix = "stopping to be resumed";
              } else if (max_restarts >= 0 && restarts >= max_restarts) {
                prefix = "restart budget spent";
              } else if (budget >= 0 && restarts >= budget) {
                prefix = std::string(nouns[c]) + " budget spent";
              } else {
                prefix = "requeued job 12 (" + std::string(nouns[c]) + " " +
                         std::to_string(restarts + 1);
                expected = true;
              }
              BOOST_TEST(got.requeued == expected, got.text);
              BOOST_TEST(starts_with(got.text, prefix), got.text << " (expected " << prefix << ")");
              ++cases;
            }
          }
        }
      }
    }
  }
  BOOST_TEST(cases == 2 * 2 * 5 * 4 * 3 * 4);
}

// A crash loop: failing again from the same checkpoint (none, both times, is the same too).
BOOST_AUTO_TEST_CASE(crash_loop_for_every_pair) {
  const std::vector<std::optional<slurm::FailurePoint>> before = {
      std::nullopt, slurm::FailurePoint{"", 300}, slurm::FailurePoint{"step-300", 320},
      slurm::FailurePoint{"step-400", 420}};
  const std::vector<std::string> now_checkpoints = {"", "step-300", "step-400"};
  for (const auto& previous : before) {
    for (const auto& checkpoint : now_checkpoints) {
      for (const std::int64_t step : {-1, 320, 350}) {
        const bool expected = previous.has_value() && previous->checkpoint == checkpoint;
        BOOST_TEST(slurm::crash_loop(previous, {checkpoint, step}) == expected,
                   (previous ? previous->checkpoint : "none") << " then " << checkpoint);
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
