#include "cohort/slurm/failure_requeue.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
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

// Nodes found unreachable or not responding are not down yet in the controller's eyes, and until
// they are, a requeued job cannot complete, take its update, nor start again. So the requeue
// waits for them (up to node_failure_wait): time the job could not have run anyway, and then the
// requeued job completes as soon as its batch script ends (make_updates relies on it).
void await_lost_down(const FailureRequeueOptions& o, const std::vector<FailedNode>& failed) {
  std::vector<std::string> names;
  for (const auto& node : failed) {
    if (node.problem == kUnreachable || node.problem == kNotResponding) names.push_back(node.name);
  }
  if (names.empty()) return;
  try {
    const auto up = await_down(names, o.node_failure_wait);
    if (!up.empty()) {
      std::fprintf(stderr,
                   "cohort: warning: the controller does not count %s as down after %lld s: the "
                   "requeued job may wait for it\n",
                   env::compress_hostlist(up).c_str(),
                   static_cast<long long>(o.node_failure_wait.count()));
    }
  } catch (const Error& e) {  // said, not swallowed: the requeue goes on
    std::fprintf(stderr, "cohort: warning: cannot check the job's nodes: %s\n", e.what());
  }
}

// The update of a requeued job, planned while it still runs and made once it is pending: its
// excluded list (`failed` kept out within max_excluded_nodes) and, when a node was lost or the
// spares were used up, the node count and tasks the step ran on (update_requeued_job says why).
struct JobUpdates {
  RequeuedShape shape;
  std::string
      text;  // the tail of the line: ", excluding n2", ", not excluding n3 (...)", ", on 3 nodes"
};

// The tasks on each of the step's nodes, when they are the same on every one; 0 when unknown.
int uniform_tasks_per_node(const env::Environment& environment) {
  const auto tasks = environment.get("SLURM_TASKS_PER_NODE");
  if (!tasks) return 0;
  const auto counts = env::expand_tasks_per_node(*tasks, "SLURM_TASKS_PER_NODE");
  if (counts.empty() ||
      std::any_of(counts.begin(), counts.end(), [&](int c) { return c != counts.front(); })) {
    return 0;
  }
  return counts.front();
}

JobUpdates plan_updates(const FailureRequeueOptions& o, const std::string& job_id,
                        const std::vector<FailedNode>& failed,
                        const env::Environment& environment) {
  JobUpdates updates;
  if (!failed.empty()) {
    try {
      const auto plan = plan_exclusion(excluded_nodes(job_id), failed, o.max_excluded_nodes);
      if (!plan.added.empty()) {
        updates.shape.excluded = plan.list;
        updates.text += ", excluding " + env::compress_hostlist(plan.added);
      }
      if (!plan.refused.empty()) {
        updates.text += ", not excluding " + env::compress_hostlist(plan.refused) +
                        " (slurm.max_excluded_nodes " + std::to_string(o.max_excluded_nodes) +
                        " reached)";
      }
    } catch (const Error& e) {  // the job is requeued all the same; only the exclusion is lost
      updates.text += ", could not exclude failed nodes: " + std::string(e.what());
    }
  }
  const bool spares_used_up = o.step_nodes > 0 && o.job_nodes > o.step_nodes;
  const int nodes = o.step_nodes > 0
                        ? o.step_nodes
                        : static_cast<int>(environment.get_int("SLURM_JOB_NUM_NODES").value_or(0));
  if ((spares_used_up || !failed.empty()) && nodes > 0) {
    updates.shape.nodes = nodes;
    updates.shape.tasks_per_node = uniform_tasks_per_node(environment);
  }
  if (spares_used_up) updates.text += ", on " + std::to_string(o.step_nodes) + " nodes";
  return updates;
}

// Hands the update to the controller and returns within kHandOff. After Slurm shrank a --no-kill
// job that lost a node, the controller holds an update of it until its accounting record is
// renewed: at once where an accounting daemon runs, otherwise only when the requeue completes,
// which waits for this job's batch script to end. So the update is made by a child process this
// one does not wait for beyond kHandOff: the controller applies it once the batch script has
// ended (within its own five retries, a second apart), and a refusal is the child's warning.
void make_updates(const JobUpdates& updates, const std::string& job_id) {
  constexpr auto kHandOff = std::chrono::seconds(1);
  if (updates.shape.excluded.empty() && updates.shape.nodes <= 0) return;
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "cohort: warning: job %s was requeued, but not updated: fork: %s\n",
                 job_id.c_str(), std::strerror(errno));
    return;
  }
  if (child == 0) {
    try {
      update_requeued_job(job_id, updates.shape);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cohort: warning: job %s was requeued, but not updated as said: %s\n",
                   job_id.c_str(), e.what());
      std::fflush(stderr);
      std::_Exit(1);
    }
    std::_Exit(0);
  }
  const auto give_up = std::chrono::steady_clock::now() + kHandOff;
  while (std::chrono::steady_clock::now() < give_up) {
    int status = 0;
    if (waitpid(child, &status, WNOHANG) == child) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
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
  if (would) await_lost_down(o, failed);
  auto excluded = failed;  // the nodes lost now, then those left out of earlier steps
  if (o.max_excluded_nodes > 0)
    excluded.insert(excluded.end(), o.left_out.begin(), o.left_out.end());
  const auto updates = would ? plan_updates(o, job.job_id, excluded, environment) : JobUpdates{};
  // Slurm's SIGKILL follows KillWait seconds after its SIGTERM: the caller's line and records go
  // out first, the updates after.
  std::signal(SIGTERM, SIG_IGN);
  const auto outcome = requeue_within_budget(job, o.budgets, o.cause, /*act=*/true, o.at);
  FailureRequeue result{outcome.requeued, /*crash_loop=*/false, line + outcome.text, failed};
  if (!outcome.requeued) return result;
  result.line += updates.text + o.after_requeue;
  if (o.on_requeued) o.on_requeued(result);
  make_updates(updates, job.job_id);
  return result;
}

}  // namespace cohort::slurm
