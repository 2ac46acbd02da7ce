#include "cohort/ops/recovery.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include "cohort/error.hpp"

namespace cohort::ops {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

// `from` without the nodes of `out`, in order.
std::vector<std::string> without(const std::vector<std::string>& from,
                                 const std::vector<std::string>& out) {
  std::vector<std::string> kept;
  for (const auto& node : from) {
    if (!contains(out, node)) kept.push_back(node);
  }
  return kept;
}

// The blamed nodes of this job not left out yet (active or spare), in the job's order.
std::vector<std::string> newly_left_out(const std::vector<std::string>& blamed,
                                        const Allocation& allocation) {
  std::vector<std::string> now;
  for (const auto& node : allocation.nodes) {
    if (contains(blamed, node) &&
        (contains(allocation.active, node) || contains(allocation.spares, node))) {
      now.push_back(node);
    }
  }
  return now;
}

// The job's nodes that are in `set`, in the job's order.
std::vector<std::string> in_job_order(const Allocation& allocation,
                                      const std::vector<std::string>& set) {
  std::vector<std::string> ordered;
  for (const auto& node : allocation.nodes) {
    if (contains(set, node)) ordered.push_back(node);
  }
  return ordered;
}

// The allocation without `out`, each failed active node replaced by the next healthy spare;
// nullopt when the spares are too few. `used` gets the spares that joined.
std::optional<Allocation> replaced(const Allocation& allocation,
                                   const std::vector<std::string>& out,
                                   std::vector<std::string>& used) {
  auto pool = without(allocation.spares, out);
  auto active = without(allocation.active, out);
  const auto missing = allocation.active.size() - active.size();
  if (missing > pool.size()) return std::nullopt;
  used.assign(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(missing));
  active.insert(active.end(), used.begin(), used.end());
  Allocation next = allocation;
  next.active = in_job_order(allocation, active);
  next.spares.assign(pool.begin() + static_cast<std::ptrdiff_t>(missing), pool.end());
  next.left_out.insert(next.left_out.end(), out.begin(), out.end());
  return next;
}

}  // namespace

Allocation initial_allocation(const std::vector<std::string>& job_nodes, int step_nodes,
                              int ranks_per_node) {
  const auto total = static_cast<int>(job_nodes.size());
  COHORT_CHECK(step_nodes >= 1 && step_nodes <= total, ConfigError, "slurm.spare_nodes: a step of ",
               step_nodes, " nodes does not fit the job's ", total);
  COHORT_CHECK(std::set<std::string>(job_nodes.begin(), job_nodes.end()).size() == job_nodes.size(),
               ConfigError, "slurm.spare_nodes: the job's node list repeats a node");
  COHORT_CHECK(ranks_per_node >= 1, ConfigError, "slurm.spare_nodes: ", ranks_per_node,
               " ranks per node");
  Allocation a;
  a.nodes = job_nodes;
  a.active.assign(job_nodes.begin(), job_nodes.begin() + step_nodes);
  a.spares.assign(job_nodes.begin() + step_nodes, job_nodes.end());
  a.ranks_per_node = ranks_per_node;
  return a;
}

int step_node_count(int job_nodes, int spare_nodes, int recorded) {
  const int nodes = recorded > 0 ? recorded : job_nodes - spare_nodes;
  COHORT_CHECK(nodes >= 1, ConfigError, "slurm.spare_nodes = ", spare_nodes,
               " leaves no node to train on in a job of ", job_nodes, " node",
               job_nodes == 1 ? "" : "s", " (ask for the step's nodes plus the spares)");
  COHORT_CHECK(nodes <= job_nodes, ConfigError, "slurm.spare_nodes: the step ran on ", nodes,
               " nodes before, but the job now has ", job_nodes);
  return nodes;
}

RecoveryPlan plan_recovery(const RecoveryInput& input) {
  RecoveryPlan plan;
  plan.next = input.allocation;
  if (!input.restartable || input.crash_loop || !input.budget_allowed) return plan;
  plan.left_out_now = newly_left_out(input.blamed, input.allocation);
  // No node blamed: a rank may have died on a healthy node, or the controller has not flagged a
  // lost one yet (SlurmdTimeout); a new step could land on it again. Requeue, as without spares.
  if (plan.left_out_now.empty()) {
    plan.kind = Recovery::kRequeue;
    return plan;
  }
  if (const auto next = replaced(input.allocation, plan.left_out_now, plan.spares_used)) {
    plan.kind = Recovery::kRestart;
    plan.next = *next;
    return plan;
  }
  plan.kind = Recovery::kRequeue;
  plan.spares_used.clear();
  plan.next.left_out.insert(plan.next.left_out.end(), plan.left_out_now.begin(),
                            plan.left_out_now.end());
  plan.next.spares = without(plan.next.spares, plan.left_out_now);
  return plan;
}

PreflightPlacement plan_preflight(const std::vector<std::string>& failed,
                                  const Allocation& allocation) {
  PreflightPlacement placement;
  placement.left_out_now = newly_left_out(failed, allocation);
  if (const auto next = replaced(allocation, placement.left_out_now, placement.spares_used)) {
    placement.next = *next;
    return placement;
  }
  placement.train = false;
  placement.spares_used.clear();
  placement.next = allocation;
  return placement;
}

}  // namespace cohort::ops
