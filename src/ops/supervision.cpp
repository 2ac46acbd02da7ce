#include "cohort/ops/supervision.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cohort/ckpt/inspect.hpp"
#include "cohort/comm/faults.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/input.hpp"
#include "cohort/monitor/sinks.hpp"
#include "cohort/ops/decisions.hpp"

namespace cohort::ops {

// The run's settings by their own names.
using namespace ::cohort::settings;  // NOLINT(google-build-using-namespace)

namespace {

// The last step rank 0 recorded in <train.run_dir>/metrics.jsonl (one record per step), i.e. where
// the run stopped, and that record's time (Unix ms, 0 when it has none); nullopt when there is
// none. Reads only the file's tail.
struct LastStep {
  std::int64_t step = -1;
  std::int64_t t_ms = 0;
};
std::optional<LastStep> last_step(const TrainConfig& config) {
  const std::string path = config.train.run_dir + "/metrics.jsonl";
  std::error_code error;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, error))) return std::nullopt;
  // Any size: only the tail is read. A FIFO or a directory there is no wait and no failure of the
  // requeue it informs: a warning, and no step known.
  std::optional<io::InputFile> opened;
  try {
    opened.emplace(io::InputFile::open(path, std::numeric_limits<std::int64_t>::max()));
  } catch (const IoError& e) {
    std::fprintf(stderr, "cohort: warning: where the run stopped is unknown: %s\n", e.what());
    return std::nullopt;
  }
  const io::InputFile& file = *opened;
  constexpr std::int64_t kTail = 64 * 1024;
  const std::int64_t from = std::max<std::int64_t>(0, file.size() - kTail);
  std::string tail(static_cast<std::size_t>(file.size() - from), '\0');
  io::read_at(file.fd(), from, tail.data(), tail.size(), path);
  std::istringstream in(tail);
  std::optional<LastStep> step;
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_object() && record.value("event", "") == "step" && record.contains("step") &&
        record["step"].is_number_integer()) {
      const auto t = record.find("t");  // Unix seconds, to the millisecond
      const bool timed =
          t != record.end() && t->is_number() && t->get<double>() > 0 && t->get<double>() < 1e11;
      step = LastStep{record["step"].get<std::int64_t>(),
                      timed ? static_cast<std::int64_t>(t->get<double>() * 1000) : 0};
    }
  }
  return step;
}

// The newest readable checkpoint's name ("" when none): where the next run resumes.
std::string resume_checkpoint(const TrainConfig& config) {
  const std::string dir = config.checkpoint_dir();
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) return "";
  for (const auto& entry : ckpt::list_checkpoints(dir)) {  // the loader's order: newest first
    if (entry.readable) return std::filesystem::path(entry.path).filename().string();
  }
  return "";
}

}  // namespace

slurm::RestartBudgets restart_budgets(const TrainConfig& config) {
  slurm::RestartBudgets b;
  b.requeue = config.slurm.requeue;
  b.max_restarts = static_cast<int>(config.slurm.max_restarts);
  b.max_preemptions = static_cast<int>(config.slurm.max_preemptions);
  b.max_failures = static_cast<int>(config.slurm.max_failures);
  b.max_preflight_requeues = static_cast<int>(config.slurm.max_preflight_requeues);
  b.ledger = slurm::ledger_path(config.train.run_dir);
  return b;
}

RunPoint run_point(const TrainConfig& config) {
  RunPoint point;
  const auto last = last_step(config);
  point.at.step = last ? last->step : -1;
  point.last_step_ms = last ? last->t_ms : 0;
  point.at.checkpoint = resume_checkpoint(config);
  return point;
}

slurm::FailureRequeue requeue_after_failure(const TrainConfig& config, const std::string& reason,
                                            const env::Environment& environment,
                                            const RequeueReport& report, slurm::RestartCause cause,
                                            std::vector<slurm::FailedNode> faulty,
                                            const std::optional<KnownBlame>& known) {
  slurm::FailureRequeueOptions o;
  o.budgets = restart_budgets(config);
  o.cause = cause;
  o.max_excluded_nodes = static_cast<int>(config.slurm.max_excluded_nodes);
  o.node_failure_wait = std::chrono::seconds(config.slurm.node_failure_wait);
  std::vector<std::string> reports;
  o.faulty = std::move(faulty);
  for (auto& node : read_fault_reports(config.train.run_dir + "/node_faults", reports))
    o.faulty.push_back(std::move(node));
  if (known) {
    o.blame_known = true;
    o.lost = known->lost;
    o.left_out = known->left_out;
    o.step_nodes = known->step_nodes;
    o.job_nodes = known->job_nodes;
  }
  o.at = run_point(config).at;
  o.after_requeue = o.at.checkpoint.empty() ? "; no checkpoint yet: the next run starts over"
                                            : "; the next run resumes from " + o.at.checkpoint;
  // The run's record says why it stopped (for report/top), then the caller reports: once.
  const auto record = [&](const slurm::FailureRequeue& outcome) {
    const std::string metrics = config.train.run_dir + "/metrics.jsonl";
    if (std::filesystem::exists(metrics)) {
      monitor::JsonlSink(metrics, /*append=*/true)
          .write(
              {{"event", requeue_event(outcome)}, {"step", o.at.step}, {"message", outcome.line}});
    }
    if (report) report(outcome);
  };
  o.on_requeued = record;
  auto outcome = slurm::requeue_after_failure(o, reason, environment);
  std::error_code ignored;  // a report left behind is read again, and excluded again, next time
  for (const auto& path : reports) std::filesystem::remove(path, ignored);
  if (!outcome.requeued) record(outcome);
  return outcome;
}

bool is_device_fault(const std::exception& error) {
  if (dynamic_cast<const DeviceError*>(&error) != nullptr) return true;
  if (dynamic_cast<const Error*>(&error) != nullptr) return false;  // classified where thrown
  return comm::classify_message(error.what()) == comm::FaultClass::kNode;
}

}  // namespace cohort::ops
