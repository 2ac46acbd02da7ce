#include "cohort/slurm/nodes.hpp"

#include <algorithm>
#include <set>
#include <thread>

#include "cohort/env/hostlist.hpp"
#include "slurm/slurm_check.hpp"

namespace cohort::slurm {
namespace {

struct NodeInfoFree {
  void operator()(node_info_msg_t* msg) const noexcept { slurm_free_node_info_msg(msg); }
};

// What is wrong with a node in the controller's eyes; empty when nothing is.
std::string problem_of(std::uint32_t state) {
  if (state & NODE_STATE_NO_RESPOND) return "not responding";
  if ((state & NODE_STATE_BASE) == NODE_STATE_DOWN) return "down";
  if (state & NODE_STATE_FAIL) return "failing";
  if (state & NODE_STATE_DRAIN) return "draining";
  return "";
}

std::vector<FailedNode> failed_now(const std::vector<std::string>& nodes) {
  detail::init_once();
  node_info_msg_t* raw = nullptr;
  COHORT_SLURM_CHECK(slurm_load_node(0, &raw, SHOW_ALL));
  const std::unique_ptr<node_info_msg_t, NodeInfoFree> info(raw);
  const std::set<std::string> wanted(nodes.begin(), nodes.end());
  std::vector<FailedNode> failed;
  for (std::uint32_t i = 0; info && i < info->record_count; ++i) {
    const node_info_t& node = info->node_array[i];
    if (node.name == nullptr || wanted.count(node.name) == 0) continue;
    std::string problem = problem_of(node.node_state);
    if (!problem.empty()) failed.push_back({node.name, std::move(problem)});
  }
  // In the job's node order, not the controller's.
  std::sort(failed.begin(), failed.end(), [&](const FailedNode& a, const FailedNode& b) {
    return std::find(nodes.begin(), nodes.end(), a.name) <
           std::find(nodes.begin(), nodes.end(), b.name);
  });
  return failed;
}

}  // namespace

std::vector<FailedNode> failed_nodes(const std::vector<std::string>& nodes,
                                     std::chrono::seconds wait) {
  const auto give_up = std::chrono::steady_clock::now() + wait;
  while (true) {
    auto failed = failed_now(nodes);
    if (!failed.empty() || std::chrono::steady_clock::now() >= give_up) return failed;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
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

void exclude_nodes(const std::string& job_id, const std::vector<std::string>& nodes) {
  job_desc_msg_t update = job_update(job_id);
  std::string list = env::compress_hostlist(nodes);
  std::vector<char> text(list.begin(), list.end());
  text.push_back('\0');
  update.exc_nodes = text.data();
  COHORT_SLURM_CHECK(slurm_update_job(&update));
}

void set_node_range(const std::string& job_id, int min, int max) {
  COHORT_CHECK(min >= 1 && min <= max, SlurmError, "node range ", min, "-", max, " of job ", job_id,
               " is empty");
  // The task count follows: a job of N+K nodes x T tasks asks N+K x T tasks, which N nodes with T
  // per node cannot hold (the job would stay pending).
  std::uint32_t per_node = 0;
  {
    const detail::JobInfo info = detail::load_job(job_id);
    const slurm_job_info_t& job = info->job_array[0];
    if (job.ntasks_per_node != 0 && job.ntasks_per_node != NO_VAL16) {
      per_node = job.ntasks_per_node;
    } else if (job.num_nodes != 0 && job.num_tasks != 0 && job.num_tasks != NO_VAL) {
      per_node = job.num_tasks / job.num_nodes;
    }
  }
  job_desc_msg_t update = job_update(job_id);
  update.min_nodes = static_cast<std::uint32_t>(min);
  update.max_nodes = static_cast<std::uint32_t>(max);
  if (per_node > 0) update.num_tasks = per_node * static_cast<std::uint32_t>(min);
  COHORT_SLURM_CHECK(slurm_update_job(&update));
}

}  // namespace cohort::slurm
