#include "cohort/slurm/nodes.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <thread>

#include "cohort/env/hostlist.hpp"
#include "cohort/slurm/node_probe.hpp"
#include "slurm/slurm_check.hpp"

namespace cohort::slurm {
namespace {

struct NodeInfoFree {
  void operator()(node_info_msg_t* msg) const noexcept { slurm_free_node_info_msg(msg); }
};

// What is wrong with a node in the controller's eyes; empty when nothing is.
std::string problem_of(std::uint32_t state) {
  if (state & NODE_STATE_NO_RESPOND) return kNotResponding;
  if ((state & NODE_STATE_BASE) == NODE_STATE_DOWN) return "down";
  if (state & NODE_STATE_FAIL) return "failing";
  if (state & NODE_STATE_DRAIN) return "draining";
  return "";
}

// What the controller says about `nodes` now: those it counts as failed, and where the slurmd of
// each other one listens.
struct NodeStates {
  std::vector<FailedNode> flagged;
  std::vector<Endpoint> others;
  std::set<std::string> down;  // flagged, and DOWN (not only not responding yet)
};

NodeStates states_now(const std::vector<std::string>& nodes) {
  detail::init_once();
  node_info_msg_t* raw = nullptr;
  COHORT_SLURM_CHECK(slurm_load_node(0, &raw, SHOW_ALL));
  const std::unique_ptr<node_info_msg_t, NodeInfoFree> info(raw);
  const std::set<std::string> wanted(nodes.begin(), nodes.end());
  NodeStates states;
  for (std::uint32_t i = 0; info && i < info->record_count; ++i) {
    const node_info_t& node = info->node_array[i];
    if (node.name == nullptr || wanted.count(node.name) == 0) continue;
    std::string problem = problem_of(node.node_state);
    if ((node.node_state & NODE_STATE_BASE) == NODE_STATE_DOWN) states.down.insert(node.name);
    if (!problem.empty()) {
      states.flagged.push_back({node.name, std::move(problem)});
    } else {
      states.others.push_back({node.name, node.node_addr ? node.node_addr : node.name, node.port});
    }
  }
  return states;
}

// `failed` in the job's node order, not the controller's.
std::vector<FailedNode> in_job_order(std::vector<FailedNode> failed,
                                     const std::vector<std::string>& nodes) {
  std::sort(failed.begin(), failed.end(), [&](const FailedNode& a, const FailedNode& b) {
    return std::find(nodes.begin(), nodes.end(), a.name) <
           std::find(nodes.begin(), nodes.end(), b.name);
  });
  return failed;
}

// The nodes the controller flags, else (`probe`) those whose slurmd does not answer. When most of
// them do not, the fault is more likely this node's own network than theirs: none is blamed.
std::vector<FailedNode> failed_now(const std::vector<std::string>& nodes, bool probe) {
  auto states = states_now(nodes);
  if (states.flagged.empty() && probe) {
    const auto silent = unreachable(states.others);
    if (silent.size() * 2 > states.others.size()) {
      std::fprintf(stderr,
                   "cohort: warning: %zu of the job's %zu nodes do not answer from here (%s): "
                   "none is blamed for it\n",
                   silent.size(), states.others.size(), env::compress_hostlist(silent).c_str());
    } else {
      for (const auto& name : silent) states.flagged.push_back({name, kUnreachable});
    }
  }
  return in_job_order(std::move(states.flagged), nodes);
}

// Asks `ask(first)` every second until `done(answer)` or `wait` has passed; the last answer.
template <typename Ask, typename Done>
auto poll_controller(std::chrono::seconds wait, Ask ask, Done done) {
  const auto give_up = std::chrono::steady_clock::now() + wait;
  for (bool first = true;; first = false) {
    auto answer = ask(first);
    if (done(answer) || std::chrono::steady_clock::now() >= give_up) return answer;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

}  // namespace

std::vector<FailedNode> failed_nodes(const std::vector<std::string>& nodes,
                                     std::chrono::seconds wait) {
  // The probe once: a node lost with the step is unreachable at once; and each probe is an error
  // line in slurmd's log ("Zero Bytes were transmitted or received").
  return poll_controller(
      wait, [&](bool first) { return failed_now(nodes, first); },
      [](const std::vector<FailedNode>& failed) { return !failed.empty(); });
}

std::vector<std::string> await_down(const std::vector<std::string>& nodes,
                                    std::chrono::seconds wait) {
  return poll_controller(
      wait,
      [&](bool) {
        const auto states = states_now(nodes);
        std::vector<std::string> up;
        for (const auto& name : nodes) {
          if (states.down.count(name) == 0) up.push_back(name);
        }
        return up;
      },
      [](const std::vector<std::string>& up) { return up.empty(); });
}

ExclusionPlan plan_exclusion(const std::vector<std::string>& excluded,
                             const std::vector<FailedNode>& failed, int max_excluded) {
  ExclusionPlan plan;
  plan.list = excluded;
  for (const auto& node : failed) {
    if (std::find(plan.list.begin(), plan.list.end(), node.name) != plan.list.end()) continue;
    if (static_cast<int>(plan.list.size()) >= max_excluded) {
      plan.refused.push_back(node.name);
      continue;
    }
    plan.list.push_back(node.name);
    plan.added.push_back(node.name);
  }
  return plan;
}

std::vector<std::string> excluded_nodes(const std::string& job_id) {
  const detail::JobInfo info = detail::load_job(job_id);
  const char* list = info->job_array[0].exc_nodes;
  if (list == nullptr || *list == '\0') return {};
  return env::expand_hostlist(list, "ExcNodeList of job " + job_id);
}

namespace {

// A job update message for `job_id`, the rest left as it is.
job_desc_msg_t job_update(const std::string& job_id) {
  detail::init_once();
  job_desc_msg_t update;
  slurm_init_job_desc_msg(&update);
  char* end = nullptr;
  update.job_id = static_cast<std::uint32_t>(std::strtoul(job_id.c_str(), &end, 10));
  COHORT_CHECK(!job_id.empty() && *end == '\0', SlurmError, "job id '", job_id,
               "' is not a number");
  return update;
}

}  // namespace

void update_requeued_job(const std::string& job_id, const RequeuedShape& shape) {
  job_desc_msg_t update = job_update(job_id);
  const std::string list = env::compress_hostlist(shape.excluded);
  std::vector<char> text(list.begin(), list.end());
  text.push_back('\0');
  if (!shape.excluded.empty()) update.exc_nodes = text.data();
  if (shape.nodes > 0) {
    const std::int64_t tasks = std::int64_t{shape.nodes} * std::max(shape.tasks_per_node, 0);
    COHORT_CHECK(tasks < std::int64_t{NO_VAL}, SlurmError, "job ", job_id, ": ", shape.nodes,
                 " nodes x ", shape.tasks_per_node, " tasks is too many");
    update.min_nodes = static_cast<std::uint32_t>(shape.nodes);
    update.max_nodes = static_cast<std::uint32_t>(shape.nodes);
    if (tasks > 0) update.num_tasks = static_cast<std::uint32_t>(tasks);
  }
  COHORT_SLURM_CHECK(slurm_update_job(&update));
}

}  // namespace cohort::slurm
