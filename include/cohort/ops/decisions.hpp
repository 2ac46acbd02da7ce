// The decisions of a run's supervision, as pure functions of their inputs: whether a failed step is
// requeued, the exit code of the batch script after a pre-flight, a requeue or a step, the record a
// requeue attempt leaves in metrics.jsonl, what kind of failure ended a training, and the line a
// stop for a signal prints. No I/O and no LibTorch: the code that acts on them (supervise.hpp,
// preemption, the trainer) asks here, and tests/unit/ops go through their whole input space.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "cohort/ops/doctor.hpp"
#include "cohort/slurm/failure_requeue.hpp"

namespace cohort::ops {

// Whether a step that ended with `step_code` is requeued (slurm::lost_rank_exit: a rank was lost
// or its node failed; never Cohort's own failures, 0 or 75).
bool requeue_after_step(int step_code);

// `cohort supervise`'s exit code: 0 after a requeue, else the step's.
int supervise_exit(int step_code, const std::optional<slurm::FailureRequeue>& requeue);

// `cohort slurm requeue`'s exit code: 0 when requeued, 75 (resumable) when not.
int requeue_exit(const slurm::FailureRequeue& outcome);

// After the pre-flight: train when there is no report (the checks are a help, not a gate) or every
// node passed (a network below slurm.preflight_bandwidth is said, not failed); else requeue
// without the nodes that failed.
enum class PreflightVerdict { kTrain, kRequeue };
PreflightVerdict decide_preflight(const std::optional<DoctorReport>& report);

// The batch script's exit code after a pre-flight requeue attempt: 0 when requeued, else the
// doctor's (80 + the index of its first failing check).
int preflight_exit(const slurm::FailureRequeue& outcome, const DoctorReport& report);

// metrics.jsonl's event for a requeue attempt: "requeue", "crash_loop" or "step_failed".
const char* requeue_event(const slurm::FailureRequeue& outcome);

// What ended a training: a node fault (is_device_fault: report the node, end every rank with
// 78), the job's configuration (LibTorch's out-of-memory or invalid device ordinal, which
// comm::classify_message names: exit 2), or anything else (handled by main as it is).
enum class FailureKind { kNodeFault, kConfiguration, kOther };
FailureKind classify_failure(const std::exception& error);

// Not a signal: the job's time limit is near (slurm.time_margin), agreed on like a signal.
inline constexpr int kWallTime = 1000;

// The line of a stop for a signal: "<SIGUSR1 | time limit in N s or less> at step S: checkpoint
// saved; <the requeue's text>". `signal` is a signal number or kWallTime.
std::string come_back_line(int signal, std::int64_t step, std::int64_t time_margin,
                           const std::string& requeue_text);

}  // namespace cohort::ops
