// Which nodes of a job the controller counts as failed, and keeping a requeued job off them.
//
// Protocol (what `cohort slurm requeue` does after a training step failed): failed_nodes() asks
// the controller (slurm_load_node) about the job's nodes and returns those that are DOWN, FAIL,
// not responding or draining, waiting up to a bound for the controller to notice a lost node
// (it pings slurmd every SlurmdTimeout/3 seconds). plan_exclusion() decides which of them join the
// job's excluded node list under slurm.max_excluded_nodes; after the job was requeued (the
// controller refuses ExcNodeList changes to a running job) exclude_nodes() writes the new list
// with slurm_update_job, so the next allocation avoids them. Every call through
// COHORT_SLURM_CHECK.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace cohort::slurm {

struct FailedNode {
  std::string name;
  std::string problem;  // "not responding", "down", "failing", "draining"
};

// The nodes of `nodes` the controller counts as failed now; when none is and `wait` is positive,
// asks again every second until one is or `wait` has passed. SlurmError when it cannot say.
std::vector<FailedNode> failed_nodes(const std::vector<std::string>& nodes,
                                     std::chrono::seconds wait = std::chrono::seconds(0));

// Decision, no I/O: `failed` nodes not yet in `excluded` are added while the list stays within
// `max_excluded`; the others are `refused` (the job would run out of places to go).
struct ExclusionPlan {
  std::vector<std::string> added;    // newly excluded, in order
  std::vector<std::string> refused;  // failed, but over the limit
  std::vector<std::string> list;     // the whole excluded list afterwards
};
ExclusionPlan plan_exclusion(const std::vector<std::string>& excluded,
                             const std::vector<FailedNode>& failed, int max_excluded);

// The job's excluded node list, expanded (empty when none).
std::vector<std::string> excluded_nodes(const std::string& job_id);
// Replaces the excluded node list of a pending (e.g. just requeued) job.
void exclude_nodes(const std::string& job_id, const std::vector<std::string>& nodes);
// Lets a pending job start on `min` to `max` nodes, its task count `min` x its tasks per node (a
// job with spares, requeued after they were used up: with its failed nodes excluded, its N+K may
// no longer exist).
void set_node_range(const std::string& job_id, int min, int max);

}  // namespace cohort::slurm
