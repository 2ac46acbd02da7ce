// The requeue policy after a failed training step (exit 76: a collective hung; 77: a rank or node
// was lost; 137: a task was killed), for `cohort slurm requeue`, `cohort supervise` and a library
// user's own launcher: requeue the job through libslurm within its restart budget, and keep it
// off the nodes the controller counts as failed, up to a limit.
//
// Protocol: requeue_after_failure() waits up to node_failure_wait for the controller to flag the
// job's lost nodes or for them to be found unreachable (only when a requeue will happen and
// exclusion is wanted), then for the lost ones to be down (until then a requeued job cannot
// complete), reads the job's excluded list and plans the update, ignores SIGTERM (Slurm
// terminates the running job as it requeues it, this process included, possibly before the RPC
// returns), requeues, hands the outcome to `on_requeued` (Slurm's SIGKILL follows KillWait seconds
// after the requeue: what must not be lost, the line and the records, goes first), and then hands
// the controller one update of the job (excluded list, node count, tasks: it takes them only for a
// pending job) from a child process it waits for at most a second (nodes.hpp and the source say
// why); a refused update is a warning on stderr. The caller ends soon after. It returns one line
// that tells the story,
// "<reason>: rank 1 (node n2) lost at step 340 (not responding); requeued job 12 (failure 1/3),
// excluding n2<after_requeue>", and whether the job was requeued. A failure from the same
// checkpoint as the one before (crash_loop()) is not requeued: "crash loop: ...".
// Warnings (the controller cannot list nodes) go to stderr; the requeue goes on without exclusion.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cohort/env/environment.hpp"
#include "cohort/slurm/job.hpp"
#include "cohort/slurm/nodes.hpp"
#include "cohort/slurm/restart_ledger.hpp"

namespace cohort::slurm {

struct FailureRequeue;

struct FailureRequeueOptions {
  RestartBudgets budgets;                       // slurm.requeue, the budgets, the ledger
  RestartCause cause = RestartCause::kFailure;  // or kPreflight: nodes failed `cohort doctor`
  int max_excluded_nodes = 2;                   // slurm.max_excluded_nodes (0: never exclude)
  std::chrono::seconds node_failure_wait{30};   // slurm.node_failure_wait
  // Nodes found faulty by Cohort itself (a device fault, a failed pre-flight check), excluded
  // like those the controller flags; with them known, the controller is not waited for.
  std::vector<FailedNode> faulty;
  FailurePoint at;            // where the run stopped (step -1: unknown), for the crash loop
  std::string after_requeue;  // appended when requeued ("; the next run resumes from ...")
  // A job with spares (cohort supervise's restarts in the allocation): the caller asked the
  // controller already, so `faulty` and `lost` (the nodes it flagged) are the whole blame and
  // nothing is waited for; `left_out` are the nodes left out of earlier steps of this job,
  // excluded beside them; `step_nodes` > 0 is the step's node count, which the requeued job asks
  // for (`job_nodes`: what it held; otherwise, after a lost node, SLURM_JOB_NUM_NODES).
  bool blame_known = false;
  std::vector<FailedNode> lost;
  std::vector<FailedNode> left_out;
  int step_nodes = 0;
  int job_nodes = 0;
  // Called once, right after the requeue (before the node list updates), with the whole line.
  std::function<void(const FailureRequeue&)> on_requeued;
};

struct FailureRequeue {
  bool requeued = false;
  bool crash_loop = false;  // not requeued: it failed again without a newer checkpoint
  std::string line;
  std::vector<FailedNode> blamed{};  // the nodes the line names (excluded or not)
};

// Whether a step that ended with `exit_code` (the launcher's: srun, mpirun) lost a rank rather
// than failed in Cohort: 76 (a collective hung), 77 (a peer was lost), or any code that is none of
// Cohort's own (docs/exit-codes.md): 128+N for a task killed by signal N, and what the launcher
// makes of a lost task (srun with Slurm 24.11's PMIx plugin ends a step it aborted with 14).
// 78 (a node fault: a device failed) is requeued too. Cohort's own failures (1 internal, 2 usage,
// 3 input, 4 diverged) are never requeued; 0 and 75 need no requeue.
bool lost_rank_exit(int exit_code);

FailureRequeue requeue_after_failure(const FailureRequeueOptions& options,
                                     const std::string& reason,
                                     const env::Environment& environment);

}  // namespace cohort::slurm
