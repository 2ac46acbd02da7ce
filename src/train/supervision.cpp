#include "cohort/train/supervision.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cohort/ckpt/inspect.hpp"
#include "cohort/monitor/sinks.hpp"

namespace cohort::train {
namespace {

// The last step rank 0 recorded in <train.run_dir>/metrics.jsonl (one record per step), i.e. where
// the run stopped; nullopt when there is none. Reads only the file's tail.
std::optional<std::int64_t> last_step(const TrainConfig& config) {
  std::ifstream in(config.train.run_dir + "/metrics.jsonl", std::ios::binary);
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
std::string resume_point(const TrainConfig& config) {
  const std::string dir = config.checkpoint_dir();
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

slurm::FailureRequeue requeue_after_failure(const TrainConfig& config, const std::string& reason,
                                            const env::Environment& environment) {
  slurm::FailureRequeueOptions o;
  o.requeue = config.slurm.requeue;
  o.max_restarts = static_cast<int>(config.slurm.max_restarts);
  o.max_excluded_nodes = static_cast<int>(config.slurm.max_excluded_nodes);
  o.node_failure_wait = std::chrono::seconds(config.slurm.node_failure_wait);
  o.step = last_step(config);
  o.after_requeue = resume_point(config);
  auto outcome = slurm::requeue_after_failure(o, reason, environment);
  const std::string metrics = config.train.run_dir + "/metrics.jsonl";
  if (std::filesystem::exists(metrics)) {  // the run's record says why it stopped, for report/top
    monitor::JsonlSink(metrics, /*append=*/true)
        .write({{"event", outcome.requeued ? "requeue" : "step_failed"},
                {"step", o.step ? *o.step : -1},
                {"message", outcome.line}});
  }
  return outcome;
}

}  // namespace cohort::train
