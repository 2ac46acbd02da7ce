#include "cohort/ops/decisions.hpp"

#include "cohort/comm/faults.hpp"
#include "cohort/error.hpp"
#include "cohort/ops/supervision.hpp"
#include "settings/signals.hpp"

namespace cohort::ops {

bool requeue_after_step(int step_code) { return slurm::lost_rank_exit(step_code); }

int supervise_exit(int step_code, const std::optional<slurm::FailureRequeue>& requeue) {
  return requeue && requeue->requeued ? static_cast<int>(ExitCode::kOk) : step_code;
}

int requeue_exit(const slurm::FailureRequeue& outcome) {
  return static_cast<int>(outcome.requeued ? ExitCode::kOk : ExitCode::kResumable);
}

PreflightVerdict decide_preflight(const std::optional<DoctorReport>& report) {
  return report && !report->failed_nodes().empty() ? PreflightVerdict::kRequeue
                                                   : PreflightVerdict::kTrain;
}

int preflight_exit(const slurm::FailureRequeue& outcome, const DoctorReport& report) {
  return outcome.requeued ? static_cast<int>(ExitCode::kOk) : report.exit_code();
}

const char* requeue_event(const slurm::FailureRequeue& outcome) {
  if (outcome.requeued) return "requeue";
  return outcome.crash_loop ? "crash_loop" : "step_failed";
}

FailureKind classify_failure(const std::exception& error) {
  if (is_device_fault(error)) return FailureKind::kNodeFault;
  // Cohort's own errors are classified where they are thrown; LibTorch's are read.
  if (dynamic_cast<const Error*>(&error) == nullptr &&
      comm::classify_message(error.what()) == comm::FaultClass::kConfiguration) {
    return FailureKind::kConfiguration;
  }
  return FailureKind::kOther;
}

std::string come_back_line(int signal, std::int64_t step, std::int64_t time_margin,
                           const std::string& requeue_text) {
  const std::string what = signal == kWallTime
                               ? "time limit in " + std::to_string(time_margin) + " s or less"
                               : settings::signal_name(signal);
  return what + " at step " + std::to_string(step) + ": checkpoint saved; " + requeue_text;
}

}  // namespace cohort::ops
