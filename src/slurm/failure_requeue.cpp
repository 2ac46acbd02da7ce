#include "cohort/slurm/failure_requeue.hpp"

#include <csignal>
#include <cstdio>
#include <vector>

#include "cohort/env/hostlist.hpp"
#include "cohort/error.hpp"
#include "cohort/slurm/job.hpp"
#include "cohort/slurm/nodes.hpp"

namespace cohort::slurm {
namespace {

// "rank 1 (node n2)", "ranks 4-7 (node n2)": who ran on `node`, from the job's block layout
// (SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE); "node n2" when the layout is not known.
std::string ranks_on(const std::string& node, const env::Environment& environment) {
  const auto list = environment.get("SLURM_JOB_NODELIST");
  const auto tasks = environment.get("SLURM_TASKS_PER_NODE");
  if (!list || !tasks) return "node " + node;
  const auto nodes = env::expand_hostlist(*list, "SLURM_JOB_NODELIST");
  const auto counts = env::expand_tasks_per_node(*tasks, "SLURM_TASKS_PER_NODE");
  int first = 0;
  for (std::size_t i = 0; i < nodes.size() && i < counts.size(); ++i) {
    if (nodes[i] == node) {
      const int last = first + counts[i] - 1;
      const std::string ranks = counts[i] == 1
                                    ? "rank " + std::to_string(first)
                                    : "ranks " + std::to_string(first) + "-" + std::to_string(last);
      return ranks + " (node " + node + ")";
    }
    first += counts[i];
  }
  return "node " + node;
}

// The job's nodes the controller counts as failed (waiting up to node_failure_wait for it to
// notice); none when no exclusion is wanted or the controller cannot say (a warning).
std::vector<FailedNode> lost_nodes(const FailureRequeueOptions& o,
                                   const env::Environment& environment) {
  const auto list = environment.get("SLURM_JOB_NODELIST");
  if (!list || o.max_excluded_nodes <= 0) return {};
  try {
    return failed_nodes(env::expand_hostlist(*list, "SLURM_JOB_NODELIST"), o.node_failure_wait);
  } catch (const Error& e) {  // said, not swallowed: the requeue goes on without exclusion
    std::fprintf(stderr, "cohort: warning: cannot check the job's nodes: %s\n", e.what());
    return {};
  }
}

// After the requeue: keeps the job off `failed` within max_excluded_nodes. Returns the tail of the
// line: ", excluding n2", ", not excluding n3 (slurm.max_excluded_nodes 1 reached)".
std::string exclude(int limit, const std::string& job_id, const std::vector<FailedNode>& failed) {
  if (failed.empty()) return "";
  std::string text;
  try {
    const auto plan = plan_exclusion(excluded_nodes(job_id), failed, limit);
    if (!plan.added.empty()) {
      exclude_nodes(job_id, plan.list);
      text += ", excluding " + env::compress_hostlist(plan.added);
    }
    if (!plan.refused.empty()) {
      text += ", not excluding " + env::compress_hostlist(plan.refused) +
              " (slurm.max_excluded_nodes " + std::to_string(limit) + " reached)";
    }
  } catch (const Error& e) {  // the job is requeued all the same; only the exclusion is lost
    text += ", could not exclude failed nodes: " + std::string(e.what());
  }
  return text;
}

}  // namespace

bool lost_rank_exit(int exit_code) {
  switch (exit_code) {
    case static_cast<int>(ExitCode::kOk):
    case static_cast<int>(ExitCode::kInternal):
    case static_cast<int>(ExitCode::kUsage):
    case static_cast<int>(ExitCode::kInput):
    case static_cast<int>(ExitCode::kDiverged):
    case static_cast<int>(ExitCode::kResumable):
      return false;
    default:
      return exit_code > 0;
  }
}

FailureRequeue requeue_after_failure(const FailureRequeueOptions& o, const std::string& reason,
                                     const env::Environment& environment) {
  const auto job = current_job(environment);
  const bool would = requeue_within_budget(job, o.requeue, o.max_restarts, /*act=*/false).requeued;
  const auto failed = would ? lost_nodes(o, environment) : std::vector<FailedNode>{};
  std::string line = reason + ": ";
  const std::string at = o.step ? " at step " + std::to_string(*o.step) : "";
  for (const auto& node : failed) {
    line += ranks_on(node.name, environment) + " lost" + at + " (" + node.problem + "); ";
  }
  // Slurm's SIGKILL follows KillWait seconds after its SIGTERM, long after this returns.
  std::signal(SIGTERM, SIG_IGN);
  const auto outcome = requeue_within_budget(job, o.requeue, o.max_restarts, /*act=*/true);
  line += outcome.text;
  if (outcome.requeued) line += exclude(o.max_excluded_nodes, job.job_id, failed) + o.after_requeue;
  return {outcome.requeued, line};
}

}  // namespace cohort::slurm
