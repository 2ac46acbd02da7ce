#include "cohort/ops/restart_record.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "common/json_limits.hpp"

namespace cohort::ops {
namespace {

// A real record is a few hundred bytes (a thousand left-out nodes: some tens of KiB).
constexpr std::size_t kMaxPendingBytes = 256 * 1024;

nlohmann::json to_json(const PendingRestart& p) {
  nlohmann::json left_out = nlohmann::json::array();
  for (const auto& node : p.left_out) {
    left_out.push_back({{"node", node.name}, {"problem", node.problem}});
  }
  return {{"event", "restart"},
          {"job", p.job},
          {"restart", p.number},
          {"kind", p.kind},
          {"budget", p.budget},
          {"cause", p.cause},
          {"failed_at_step", p.failed_at_step},
          {"resumed_from", p.resumed_from},
          {"left_out", left_out},
          {"spares", p.spares},
          {"nodes", p.nodes},
          {"t_last_step_ms", p.last_step_ms},
          {"t_decided_ms", p.decided_ms}};
}

// The pending record in `path`, checked field by field (the file is read as untrusted);
// IoError naming the file and the field.
nlohmann::json read_pending(const std::string& path) {
  const std::string text = io::read_small_file(path, kMaxPendingBytes);
  COHORT_CHECK(json_limits::within_depth(text), IoError, path, ": nested too deeply");
  auto record = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  COHORT_CHECK(record.is_object(), IoError, path, ": not a JSON object (a pending restart)");
  for (const char* name : {"job", "kind", "budget", "cause", "resumed_from"}) {
    COHORT_CHECK(record.contains(name) && record.at(name).is_string(), IoError, path, ": field '",
                 name, "' is missing or not a string");
  }
  for (const char* name : {"restart", "failed_at_step", "t_last_step_ms", "t_decided_ms"}) {
    COHORT_CHECK(record.contains(name) && record.at(name).is_number_integer() &&
                     record.at(name).get<std::int64_t>() >= -1,
                 IoError, path, ": field '", name, "' is missing or not a count");
  }
  for (const char* name : {"left_out", "spares", "nodes"}) {
    COHORT_CHECK(record.contains(name) && record.at(name).is_array(), IoError, path, ": field '",
                 name, "' is missing or not a list");
  }
  for (const auto& node : record.at("left_out")) {
    COHORT_CHECK(node.is_object() && node.contains("node") && node.at("node").is_string() &&
                     node.contains("problem") && node.at("problem").is_string(),
                 IoError, path, ": field 'left_out' holds an entry that is not {node, problem}");
  }
  for (const char* name : {"spares", "nodes"}) {
    for (const auto& node : record.at(name)) {
      COHORT_CHECK(node.is_string(), IoError, path, ": field '", name, "' holds a non-name");
    }
  }
  return record;
}

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", s);
  return text;
}

}  // namespace

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string pending_restart_path(const std::string& run_dir) {
  return run_dir + "/restart_pending.json";
}

std::optional<nlohmann::json> write_pending_restart(const std::string& run_dir,
                                                    const PendingRestart& pending) {
  const std::string path = pending_restart_path(run_dir);
  std::optional<nlohmann::json> stale;
  std::error_code error;
  if (std::filesystem::exists(std::filesystem::symlink_status(path, error))) {
    try {
      auto old = read_pending(path);
      if (old.at("job") == pending.job) {
        old["completed"] = false;
        old["message"] = restart_line(old);
        stale = std::move(old);
      }
    } catch (const IoError& e) {  // said, not swallowed: the new record replaces it
      std::fprintf(stderr, "cohort: warning: a pending restart record is replaced: %s\n", e.what());
    }
  }
  io::write_file_atomically(path, to_json(pending).dump() + "\n");
  return stale;
}

std::optional<CompletedRestart> complete_restart(const std::string& run_dir, const std::string& job,
                                                 std::int64_t resumed_step, double load_s,
                                                 double first_step_s, std::int64_t now_ms) {
  const std::string path = pending_restart_path(run_dir);
  std::error_code error;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, error))) return std::nullopt;
  nlohmann::json record;
  try {
    record = read_pending(path);
  } catch (const IoError& e) {  // said: the restart itself went on; only its record is lost
    std::fprintf(stderr, "cohort: warning: the restart is not recorded: %s\n", e.what());
    return std::nullopt;
  }
  if (record.at("job") != job) return std::nullopt;  // another job's: its own run completes it
  const auto last = record.at("t_last_step_ms").get<std::int64_t>();
  const auto decided = record.at("t_decided_ms").get<std::int64_t>();
  const double ready_ms = static_cast<double>(now_ms) - 1000.0 * (load_s + first_step_s);
  nlohmann::json lost = {{"detection", last > 0 ? (decided - last) / 1000.0 : 0.0},
                         {"start", std::max(0.0, (ready_ms - decided) / 1000.0)},
                         {"load", load_s},
                         {"first_step", first_step_s}};
  lost["total"] = last > 0 ? (now_ms - last) / 1000.0 : (now_ms - decided) / 1000.0 + 0.0;
  record["seconds_lost"] = lost;
  record["resumed_step"] = resumed_step;
  const auto failed_at = record.at("failed_at_step").get<std::int64_t>();
  record["redone_steps"] = failed_at >= resumed_step ? failed_at - resumed_step : 0;
  record["completed"] = true;
  record["message"] = restart_line(record);
  std::filesystem::remove(path, error);
  return CompletedRestart{record, record["message"].get<std::string>()};
}

std::string restart_line(const nlohmann::json& r) {
  std::ostringstream line;
  const bool in_allocation = r.value("kind", "") == "in_allocation";
  line << "restart " << r.value("restart", 0) << " in job " << r.value("job", "") << " ("
       << (in_allocation ? "in allocation" : "requeue") << ", " << r.value("budget", "") << "): ";
  std::string nodes;
  for (const auto& node : r.value("left_out", nlohmann::json::array())) {
    nodes += (nodes.empty() ? "" : ", ") + node.value("node", "") + " (" +
             node.value("problem", "") + ")";
  }
  line << (nodes.empty() ? "no node left out" : nodes + " left out");
  const auto spares = r.value("spares", nlohmann::json::array());
  for (std::size_t i = 0; i < spares.size(); ++i) {
    line << (i == 0 ? (spares.size() == 1 ? ", spare " : ", spares ") : ", ")
         << spares[i].get<std::string>();
  }
  if (!spares.empty()) line << " used";
  if (!r.value("completed", false)) {
    line << "; the new step failed before its first step";
    return line.str();
  }
  const auto& lost = r.at("seconds_lost");
  line << "; " << seconds(lost.value("total", 0.0)) << " lost: detection "
       << seconds(lost.value("detection", 0.0)) << ", start " << seconds(lost.value("start", 0.0))
       << ", load " << seconds(lost.value("load", 0.0)) << ", first step "
       << seconds(lost.value("first_step", 0.0)) << "; " << r.value("redone_steps", 0)
       << " steps redone";
  return line.str();
}

}  // namespace cohort::ops
