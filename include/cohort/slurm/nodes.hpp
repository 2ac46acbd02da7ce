// Which nodes of a job the controller counts as failed, and keeping a requeued job off them.
//
// Protocol (what `cohort slurm requeue` does after a training step failed): failed_nodes() asks
// the controller (slurm_load_node) about the job's nodes and returns those that are DOWN, FAIL,
// not responding or draining; when it flags none, those whose slurmd does not answer on its port
// (node_probe.hpp, once: a lost node is found in seconds, where the controller takes
// SlurmdTimeout; none when most do not answer, which more likely says this node's own network is
// cut); it asks the controller again every second up to a bound. plan_exclusion() decides which of
// them join the job's excluded node list under slurm.max_excluded_nodes; after the job was requeued
// (the controller refuses ExcNodeList changes to a running job) update_requeued_job() writes the
// new list with slurm_update_job, so the next allocation avoids them. Every call through
// COHORT_SLURM_CHECK.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace cohort::slurm {

struct FailedNode {
  std::string name;
  std::string problem;  // kNotResponding, "down", "failing", "draining", kUnreachable
};

// The problems of a lost node that is not down yet: flagged by the controller, or whose slurmd
// did not answer the probe (not flagged yet).
inline constexpr char kNotResponding[] = "not responding";
inline constexpr char kUnreachable[] = "unreachable";

// The nodes of `nodes` the controller counts as failed now, else those that are unreachable (the
// probe runs once, first); when none is and `wait` is positive, asks the controller again every
// second until it flags one or `wait` has passed. SlurmError when the controller cannot say.
std::vector<FailedNode> failed_nodes(const std::vector<std::string>& nodes,
                                     std::chrono::seconds wait = std::chrono::seconds(0));

// Waits up to `wait` until the controller counts each of `nodes` as down: only then does it give
// up on a lost node's part of a job, so that a requeued job can complete, take a new excluded
// list and start again. Returns those it still does not count as down. SlurmError when it
// cannot say.
std::vector<std::string> await_down(const std::vector<std::string>& nodes,
                                    std::chrono::seconds wait);

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

// What a requeued job is to ask for next, in one update: its excluded list (empty: unchanged),
// and its node count and tasks (0: unchanged). A job that ran with --no-kill and lost a node
// was shrunk by Slurm to its remaining nodes with all its tasks (a job of 3 nodes x 1 task that
// lost 2 asks 1 node for 3 tasks, which may never fit); a job with spares requeued after they
// were used up asks N+K nodes that the exclusion may no longer leave.
struct RequeuedShape {
  std::vector<std::string> excluded;
  int nodes = 0;
  int tasks_per_node = 0;  // with `nodes`: the task count nodes x tasks_per_node
};
// One slurm_update_job of a pending (e.g. just requeued) job.
void update_requeued_job(const std::string& job_id, const RequeuedShape& shape);

}  // namespace cohort::slurm
