// After a training step failed in a way a restart can cure (exit 76: a collective hung; 77: a rank
// or node was lost; 137: a task was killed), what `cohort slurm requeue` and `cohort supervise` do:
// requeue the Slurm job through libslurm under the trainer's restart policy (slurm.requeue,
// slurm.max_restarts) and keep it off the nodes the controller counts as failed
// (slurm.max_excluded_nodes, slurm.node_failure_wait). Prints one line that tells the story,
// "<reason>: rank 1 (node n2) lost at step 340 (not responding); requeued job 12 (restart 1/3),
// excluding n2; the next run resumes from step-00000300" (the step from metrics.jsonl). Returns 0
// when the job was requeued, 75 when not.
#pragma once

#include <string>

#include "cohort/train/config.hpp"

namespace cohort::cli {

int requeue_after_failure(const train::Config& config, const std::string& reason);

}  // namespace cohort::cli
