// Supervision of a training run from outside its ranks (`cohort supervise`, `cohort slurm
// requeue`, or a library user's own launcher): after a step failed in a way a restart can cure,
// the slurm module's requeue policy (slurm::requeue_after_failure) with the run's [slurm]
// settings, told where the run stopped (the last step record of <train.run_dir>/metrics.jsonl)
// and where the next run resumes (the newest readable checkpoint). The outcome is appended to
// metrics.jsonl (a "requeue" or "step_failed" record), so that `cohort report` and `cohort top`
// show why the run stopped. The outcome goes to the caller's `report` (it prints the line) once:
// right after the requeue, before the job's node lists are updated (Slurm ends this process
// KillWait seconds after the requeue), or at the end when not requeued; exit 0 when requeued, 75
// when not.
//
// Node faults: a rank that finds its node at fault (a CUDA or NCCL error, a GPU lost; its exit
// code is 78) files report_node_fault(): a small file <train.run_dir>/node_faults/<node>.fault.
// requeue_after_failure() excludes those nodes like the ones the controller flags, then removes
// the reports it acted on (only regular files with that suffix in that directory).
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cohort/env/environment.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/slurm/failure_requeue.hpp"

namespace cohort::comm {
class MpiSession;
}  // namespace cohort::comm
namespace cohort::env {
struct Topology;
}  // namespace cohort::env

namespace cohort::ops {

// The [slurm] budgets, with the run's restart ledger.
slurm::RestartBudgets restart_budgets(const settings::TrainConfig& config);

// What `cohort supervise` with spares knows before it requeues: the nodes it blamed (asked of the
// controller already, so nothing is waited for), those it left out of earlier steps, and the
// step's and the job's node counts (the requeued job's is lowered to step_nodes).
struct KnownBlame {
  std::vector<slurm::FailedNode> lost;  // flagged by the controller (`faulty`: reported)
  std::vector<slurm::FailedNode> left_out;
  int step_nodes = 0;
  int job_nodes = 0;
};

// What the caller does with the outcome: print its line, record the restart to come.
using RequeueReport = std::function<void(const slurm::FailureRequeue&)>;

// `cause` kFailure after a failed step; kPreflight after nodes failed `cohort doctor` (`faulty`).
slurm::FailureRequeue requeue_after_failure(
    const settings::TrainConfig& config, const std::string& reason,
    const env::Environment& environment, const RequeueReport& report,
    slurm::RestartCause cause = slurm::RestartCause::kFailure,
    std::vector<slurm::FailedNode> faulty = {},
    const std::optional<KnownBlame>& known = std::nullopt);

// Where the run stands: its newest readable checkpoint (where a restart resumes) and the last step
// rank 0 recorded in metrics.jsonl, with that record's time (Unix ms; 0 when unknown).
struct RunPoint {
  slurm::FailurePoint at;
  std::int64_t last_step_ms = 0;
};
RunPoint run_point(const settings::TrainConfig& config);

// Whether `error` is a node fault: a DeviceError, or LibTorch's report of a CUDA, cuBLAS or cuDNN
// failure that another node could cure (c10::Error carries no type for it: its message is read
// by comm::classify_message). An out-of-memory, an invalid device ordinal, an illegal address or
// a device assert is not: it would fail the same on every node.
bool is_device_fault(const std::exception& error);

// The node fault reports in `dir` (<train.run_dir>/node_faults; at most 1024): regular files
// <node>.fault whose node is a name Slurm gives, each with its problem (the file's text without
// newlines, at most 4 KiB). Their paths go to `paths`. Never throws: a report that cannot be read
// is said on stderr and left out.
std::vector<slurm::FailedNode> read_fault_reports(const std::string& dir,
                                                  std::vector<std::string>& paths);

// Files a node fault for the supervisor (never throws: the rank is failing already; a report that
// cannot be written is said on stderr).
void report_node_fault(const settings::TrainConfig& config, const std::string& node,
                       const std::string& problem) noexcept;

// Called on a rank in the catch handler of what ended its training (classify_failure): a node
// fault is the node's, not the run's: it is reported for the supervisor (which excludes the node)
// and every rank ends now with 78, instead of the others waiting in a collective for the watchdog
// (never returns). LibTorch's report of a configuration fault (out of memory, an invalid device
// ordinal) is thrown as a ConfigError (exit 2). Anything else returns, for the caller to rethrow.
void on_training_failure(const settings::TrainConfig& config, const env::Topology& topology,
                         comm::MpiSession& session, const std::exception& error);

}  // namespace cohort::ops
