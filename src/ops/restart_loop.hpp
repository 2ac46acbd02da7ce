// Inside the ops module: `cohort supervise` with hot spares (slurm.spare_nodes > 0 in a Slurm
// job), and the pre-flight step it shares with the path without them (src/ops/supervise.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cohort/env/environment.hpp"
#include "cohort/ops/doctor.hpp"
#include "cohort/ops/restart_record.hpp"
#include "cohort/ops/supervise.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/slurm/failure_requeue.hpp"

namespace cohort::ops::detail {

// `cohort doctor` as a step of one task on each of `nodes` nodes; its report, or nullopt (said)
// when it wrote none that can be read.
std::optional<DoctorReport> preflight_report(const settings::Config& config,
                                             const StepCommand& command, int ranks, int nodes,
                                             const Say& say);

// A training step run with the failed-step mark (env/step_marker.hpp: a name of its own,
// <run_dir>/step_failed-<pid>-<n>, removed before and after): its exit code; once a rank marked the
// step failed, that rank's code, srun ended after ops::kMarkGrace instead of when it gives up on a
// node it cannot reach. `preempted`: rank 0 requeued the job for a preemption during the step (the
// ledger counts one more), so a failed exit is Slurm ending the step for that requeue, not a
// failure to restart from.
struct TrainingStepEnd {
  int code = 0;
  bool preempted = false;
};
TrainingStepEnd run_training_step(const settings::Config& config,
                                  const std::vector<std::string>& argv);

// "; network below slurm.preflight_bandwidth: ..." when that check failed, else "".
std::string network_note(const DoctorReport& report);

// The pre-flight over all of the job's nodes, then training steps on N of them, each failed step
// that a restart cures followed by a new one in the allocation (recovery.hpp's plan), until one
// ends for another reason (its exit code), or the plan says requeue or stop (0 after a requeue,
// else the step's code). `ranks`: 0, or N x the ranks per node.
int supervise_with_spares(const settings::Config& config, const StepCommand& command, int ranks,
                          const Say& say);

// The restart record of a requeue without spares (restart_record.hpp): pend_requeue() writes it
// before the requeue (Slurm ends this process soon after it), when the job will be requeued as far
// as the ledger can tell; settle_requeue() completes it with the nodes blamed and the time of the
// decision, or removes it when the job was not requeued after all.
std::optional<PendingRestart> pend_requeue(const settings::Config& config,
                                           const std::string& reason,
                                           const env::Environment& environment);
void settle_requeue(const settings::Config& config, std::optional<PendingRestart> pending,
                    const slurm::FailureRequeue& outcome);

}  // namespace cohort::ops::detail
