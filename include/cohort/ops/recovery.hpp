// Hot spares (slurm.spare_nodes): which nodes of the allocation a training step runs on, and what
// `cohort supervise` does when a step fails or pre-flight finds a bad node, as pure functions of
// their inputs (no I/O, no Slurm), so that tests/unit/ops goes through their whole input space.
//
// The job holds N + K nodes; the step runs on N of them (`active`), the other K wait as `spares`.
// A node blamed for a failure is `left_out` for the rest of the job. After a failed step: each
// blamed active node is replaced by the next healthy spare; a failure that blamed no node of the
// job is requeued as without spares (a rank may have died on a healthy node, or the controller
// has not flagged a lost node yet: a new step could land on it again); with too few spares left
// the job is requeued too (the slurm module's path, its failed nodes excluded). A crash loop or a
// spent budget stops it, as it stops a requeue. Every list is in the job's node order, which is the
// order in which srun gives a step's nodes their ranks: active[0] (the first node, where the batch
// script runs) holds ranks 0 .. ranks_per_node - 1, and so on; a spare takes the ranks of its place
// in that order, not those of the node it replaces.
#pragma once

#include <string>
#include <vector>

namespace cohort::ops {

struct Allocation {
  std::vector<std::string> nodes;     // the job's, in order
  std::vector<std::string> active;    // the step's nodes
  std::vector<std::string> spares;    // healthy nodes of the job waiting to replace one
  std::vector<std::string> left_out;  // blamed in this job, never used again by it
  int ranks_per_node = 1;
};

// The first `step_nodes` of `job_nodes` train, the rest are spares. ConfigError (naming
// slurm.spare_nodes) when step_nodes is not within 1 .. the job's nodes, or a node repeats.
Allocation initial_allocation(const std::vector<std::string>& job_nodes, int step_nodes,
                              int ranks_per_node);

// How many of the job's `job_nodes` nodes a step runs on: `recorded` (the restart ledger's, when
// the job ran before) or job_nodes - spare_nodes. ConfigError when that leaves no node:
// "slurm.spare_nodes = 2 leaves no node to train on in a job of 2 nodes".
int step_node_count(int job_nodes, int spare_nodes, int recorded);

enum class Recovery {
  kStop,     // not a failure a restart cures, a crash loop, or the failure budget is spent
  kRestart,  // a new step in this allocation (on spares for the blamed nodes)
  kRequeue,  // no node blamed, or too few healthy ones left: the job goes back to the queue
};

struct RecoveryInput {
  bool restartable = false;  // slurm::lost_rank_exit(the step's exit code)
  bool crash_loop = false;   // it failed again from the same checkpoint
  bool budget_allowed = false;
  std::vector<std::string> blamed;  // faulty (reported) or failed (the controller) nodes
  Allocation allocation;
};

struct RecoveryPlan {
  Recovery kind = Recovery::kStop;
  Allocation next;                        // the allocation after it (kRestart: the new step's)
  std::vector<std::string> left_out_now;  // blamed nodes of this job, newly left out, in order
  std::vector<std::string> spares_used;   // the spares that join the step, in order
};

RecoveryPlan plan_recovery(const RecoveryInput& input);

// After pre-flight: the nodes that failed `cohort doctor` are left out; training goes on when
// enough healthy nodes remain for the step (spares replace the failed active ones; `train`), else
// the job is requeued. `next` is the allocation to train on.
struct PreflightPlacement {
  bool train = true;
  Allocation next;
  std::vector<std::string> left_out_now;
  std::vector<std::string> spares_used;
};
PreflightPlacement plan_preflight(const std::vector<std::string>& failed,
                                  const Allocation& allocation);

}  // namespace cohort::ops
