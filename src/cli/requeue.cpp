#include "requeue.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cohort/ckpt/inspect.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/env/hostlist.hpp"
#include "cohort/error.hpp"
#include "cohort/monitor/sinks.hpp"
#include "cohort/slurm/job.hpp"
#include "cohort/slurm/nodes.hpp"

namespace cohort::cli {
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

// The job's nodes the controller counts as failed (waiting up to slurm.node_failure_wait for it
// to notice); none when no exclusion is wanted or the controller cannot say (a warning).
std::vector<slurm::FailedNode> failed_nodes(const train::Config& config,
                                            const env::Environment& environment) {
  const auto list = environment.get("SLURM_JOB_NODELIST");
  const std::int64_t wait = config.get_int("slurm.node_failure_wait");
  COHORT_CHECK(wait >= 0, ConfigError, "slurm.node_failure_wait must be >= 0 (got ", wait, ")");
  if (!list || config.get_int("slurm.max_excluded_nodes") <= 0) return {};
  try {
    return slurm::failed_nodes(env::expand_hostlist(*list, "SLURM_JOB_NODELIST"),
                               std::chrono::seconds(wait));
  } catch (const Error& e) {  // said, not swallowed: the requeue goes on without exclusion
    std::fprintf(stderr, "cohort: warning: cannot check the job's nodes: %s\n", e.what());
    return {};
  }
}

// After the requeue: keeps the job off `failed` within slurm.max_excluded_nodes. Returns the
// tail of the log line: ", excluding n2", ", not excluding n3 (slurm.max_excluded_nodes 1)".
std::string exclude(const train::Config& config, const std::string& job_id,
                    const std::vector<slurm::FailedNode>& failed) {
  if (failed.empty()) return "";
  const int limit = static_cast<int>(config.get_int("slurm.max_excluded_nodes"));
  std::string text;
  try {
    const auto plan = slurm::plan_exclusion(slurm::excluded_nodes(job_id), failed, limit);
    if (!plan.added.empty()) {
      slurm::exclude_nodes(job_id, plan.list);
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

// The last step rank 0 recorded in <train.run_dir>/metrics.jsonl (one record per step), i.e. where
// the run stopped; nullopt when there is none. Reads only the file's tail.
std::optional<std::int64_t> last_step(const train::Config& config) {
  std::ifstream in(config.get_string("train.run_dir") + "/metrics.jsonl", std::ios::binary);
  if (!in) return std::nullopt;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  constexpr std::streamoff kTail = 64 * 1024;
  in.seekg(size > kTail ? size - kTail : 0);
  std::optional<std::int64_t> step;
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_object() && record.value("event", "") == "step" && record.contains("step") &&
        record["step"].is_number_integer()) {
      step = record["step"].get<std::int64_t>();
    }
  }
  return step;
}

// "; the next run resumes from step-00000300" when the run has a checkpoint.
std::string resume_point(const train::Config& config) {
  std::string dir = config.get_string("checkpoint.dir");
  if (dir.empty()) dir = config.get_string("train.run_dir") + "/checkpoints";
  std::error_code error;
  if (std::filesystem::is_directory(dir, error)) {
    for (const auto& entry : ckpt::list_checkpoints(dir)) {  // the loader's order: newest first
      if (entry.readable) {
        return "; the next run resumes from " +
               std::filesystem::path(entry.path).filename().string();
      }
    }
  }
  return "; no checkpoint yet: the next run starts over";
}

}  // namespace

int requeue_after_failure(const train::Config& config, const std::string& reason) {
  const auto environment = env::Environment::from_process();
  const auto job = slurm::current_job(environment);
  const bool allowed = config.get_bool("slurm.requeue");
  const int budget = static_cast<int>(config.get_int("slurm.max_restarts"));
  const bool would = slurm::requeue_within_budget(job, allowed, budget, /*act=*/false).requeued;
  const auto failed = would ? failed_nodes(config, environment) : std::vector<slurm::FailedNode>{};
  std::string line = reason + ": ";
  const auto step = last_step(config);
  const std::string at = step ? " at step " + std::to_string(*step) : "";
  for (const auto& node : failed) {
    line += ranks_on(node.name, environment) + " lost" + at + " (" + node.problem + "); ";
  }
  // Slurm terminates the running job as it requeues it, this process included, possibly before
  // the RPC returns: SIGTERM is ignored so that the exclusion and the outcome still happen
  // (Slurm's SIGKILL follows KillWait seconds later, long after this exits). The controller
  // takes an excluded node list only for a pending job, hence after the requeue.
  std::signal(SIGTERM, SIG_IGN);
  const auto outcome = slurm::requeue_within_budget(job, allowed, budget, /*act=*/true);
  line += outcome.text;
  if (outcome.requeued) line += exclude(config, job.job_id, failed) + resume_point(config);
  const std::string metrics = config.get_string("train.run_dir") + "/metrics.jsonl";
  if (std::filesystem::exists(metrics)) {  // the run's record says why it stopped, for report/top
    monitor::JsonlSink(metrics, /*append=*/true)
        .write({{"event", outcome.requeued ? "requeue" : "step_failed"},
                {"step", step ? *step : -1},
                {"message", line}});
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  return outcome.requeued ? 0 : static_cast<int>(ExitCode::kResumable);
}

}  // namespace cohort::cli
