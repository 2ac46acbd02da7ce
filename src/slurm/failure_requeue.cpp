#include "cohort/slurm/failure_requeue.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <vector>

#include "cohort/env/hostlist.hpp"
#include "cohort/error.hpp"

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

// The nodes to keep the job off: those Cohort found faulty, and those the controller counts as
// failed (waiting up to node_failure_wait for it to notice, unless Cohort named some); none when
// no exclusion is wanted. A controller that cannot say is a warning.
std::vector<FailedNode> lost_nodes(const FailureRequeueOptions& o,
                                   const env::Environment& environment) {
  const auto list = environment.get("SLURM_JOB_NODELIST");
  if (!list || o.max_excluded_nodes <= 0) return {};
  std::vector<FailedNode> nodes = o.faulty;
  if (o.blame_known) {  // the caller asked the controller already
    for (const auto& node : o.lost) {
      const bool known = std::any_of(nodes.begin(), nodes.end(),
                                     [&](const FailedNode& n) { return n.name == node.name; });
      if (!known) nodes.push_back(node);
    }
    return nodes;
  }
  try {
    const auto wait = o.faulty.empty() ? o.node_failure_wait : std::chrono::seconds(0);
    for (auto& node : failed_nodes(env::expand_hostlist(*list, "SLURM_JOB_NODELIST"), wait)) {
      const bool known = std::any_of(nodes.begin(), nodes.end(),
                                     [&](const FailedNode& n) { return n.name == node.name; });
      if (!known) nodes.push_back(std::move(node));
    }
  } catch (const Error& e) {  // said, not swallowed: the requeue goes on without exclusion
    std::fprintf(stderr, "cohort: warning: cannot check the job's nodes: %s\n", e.what());
  }
  return nodes;
}

// "crash loop: failed again from step-00000300 (at step 352; the failure before at step 350)
// without a newer checkpoint: not requeueing job 12", or "" when this failure is not one.
std::string crash_loop_text(const FailureRequeueOptions& o, const JobIdentity& job) {
  if (o.cause != RestartCause::kFailure || o.budgets.ledger.empty() || !job.in_job) return "";
  const auto ledger = RestartLedger::load(o.budgets.ledger, job.job_id);
  if (!crash_loop(ledger.last_failure, o.at)) return "";
  const std::string from =
      o.at.checkpoint.empty() ? "without a checkpoint" : "from " + o.at.checkpoint;
  return "crash loop: failed again " + from + " (at step " + std::to_string(o.at.step) +
         "; the failure before at step " + std::to_string(ledger.last_failure->step) +
         ") without a newer checkpoint: not requeueing job " + job.target;
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

// A job with spares, requeued after they were used up: its node and task counts lowered to the
// step's nodes, so that it is not left pending for N+K nodes that the exclusion no longer leaves.
// Returns the tail of the line: ", on 3 nodes".
std::string node_range(const FailureRequeueOptions& o, const std::string& job_id) {
  if (o.step_nodes <= 0 || o.job_nodes <= o.step_nodes) return "";
  try {
    set_node_range(job_id, o.step_nodes, o.step_nodes);
  } catch (const Error& e) {  // the job is requeued all the same; it may wait for N+K nodes
    return ", could not let it start on fewer nodes: " + std::string(e.what());
  }
  return ", on " + std::to_string(o.step_nodes) + " nodes";
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
  std::string line = reason + ": ";
  if (const auto loop = crash_loop_text(o, job); !loop.empty()) {
    return {/*requeued=*/false, /*crash_loop=*/true, line + loop};
  }
  const bool would = requeue_within_budget(job, o.budgets, o.cause, /*act=*/false).requeued;
  const auto failed = would ? lost_nodes(o, environment) : std::vector<FailedNode>{};
  const std::string at = o.at.step >= 0 ? " at step " + std::to_string(o.at.step) : "";
  for (const auto& node : failed) {
    const bool ours = std::any_of(o.faulty.begin(), o.faulty.end(),
                                  [&](const FailedNode& n) { return n.name == node.name; });
    line += ranks_on(node.name, environment) + (ours ? " faulty" : " lost") + at + " (" +
            node.problem + "); ";
  }
  // Slurm's SIGKILL follows KillWait seconds after its SIGTERM, long after this returns.
  std::signal(SIGTERM, SIG_IGN);
  const auto outcome = requeue_within_budget(job, o.budgets, o.cause, /*act=*/true, o.at);
  line += outcome.text;
  if (outcome.requeued) {
    auto excluded = failed;  // the nodes lost now, then those left out of earlier steps
    if (o.max_excluded_nodes > 0)
      excluded.insert(excluded.end(), o.left_out.begin(), o.left_out.end());
    line += exclude(o.max_excluded_nodes, job.job_id, excluded) + node_range(o, job.job_id) +
            o.after_requeue;
  }
  return {outcome.requeued, /*crash_loop=*/false, line, failed};
}

}  // namespace cohort::slurm
