// The pre-flight report: its exit code, JSON (both ways: ranks gather it, `cohort supervise`
// reads it back) and text.
#include <cstdio>
#include <sstream>

#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/ops/doctor.hpp"
#include "common/json_limits.hpp"

namespace cohort::ops {

namespace {

int check_index(const std::string& name) {
  for (int i = 0; i < static_cast<int>(std::size(kDoctorChecks)); ++i) {
    if (name == kDoctorChecks[i]) return i;
  }
  return -1;
}

CheckResult check_from_json(const nlohmann::json& json, const std::string& where) {
  COHORT_CHECK(json.is_object() && json.contains("name") && json["name"].is_string() &&
                   check_index(json["name"].get<std::string>()) >= 0 && json.contains("status") &&
                   json["status"].is_string() && json.contains("detail") &&
                   json["detail"].is_string(),
               IoError, where, ": field 'checks' holds an entry that is not a check");
  const std::string status = json["status"].get<std::string>();
  CheckResult check{json["name"].get<std::string>(), CheckStatus::kPass,
                    json["detail"].get<std::string>()};
  if (status == "fail") {
    check.status = CheckStatus::kFail;
  } else if (status == "skip") {
    check.status = CheckStatus::kSkip;
  } else {
    COHORT_CHECK(status == "pass", IoError, where, ": field 'status' is '", status, "'");
  }
  return check;
}

nlohmann::json check_to_json(const CheckResult& check) {
  return {{"name", check.name}, {"status", to_string(check.status)}, {"detail", check.detail}};
}

}  // namespace

std::string to_string(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kFail:
      return "fail";
    case CheckStatus::kSkip:
      break;
  }
  return "skip";
}

std::vector<slurm::FailedNode> DoctorReport::failed_nodes() const {
  std::vector<slurm::FailedNode> failed;
  for (const auto& node : nodes) {
    for (const auto& check : node.checks) {
      if (check.status != CheckStatus::kFail) continue;
      failed.push_back({node.node, "pre-flight " + check.name + ": " + check.detail});
      break;
    }
  }
  return failed;
}

int DoctorReport::exit_code() const {
  int first = -1;
  for (const auto& node : nodes) {
    for (const auto& check : node.checks) {
      const int index = check_index(check.name);
      if (check.status == CheckStatus::kFail && (first < 0 || index < first)) first = index;
    }
  }
  if (first < 0 && network.status == CheckStatus::kFail) first = check_index("network");
  return first < 0 ? 0 : kDoctorExitBase + first;
}

nlohmann::json to_json(const NodeReport& report) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& check : report.checks) checks.push_back(check_to_json(check));
  return {{"node", report.node}, {"checks", checks}};
}

nlohmann::json to_json(const DoctorReport& report) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& node : report.nodes) nodes.push_back(to_json(node));
  nlohmann::json failed = nlohmann::json::array();
  for (const auto& node : report.failed_nodes()) {
    failed.push_back({{"node", node.name}, {"problem", node.problem}});
  }
  return {{"nodes", nodes},
          {"network", check_to_json(report.network)},
          {"failed_nodes", failed},
          {"exit_code", report.exit_code()}};
}

std::string to_text(const DoctorReport& report) {
  std::ostringstream text;
  for (const auto& node : report.nodes) {
    for (const auto& check : node.checks) {
      text << node.node << "  " << check.name << std::string(9 - check.name.size(), ' ')
           << (check.status == CheckStatus::kFail ? "FAIL" : to_string(check.status)) << "  "
           << check.detail << "\n";
    }
  }
  text << "all nodes  network  "
       << (report.network.status == CheckStatus::kFail ? "FAIL" : to_string(report.network.status))
       << "  " << report.network.detail << "\n";
  const int code = report.exit_code();
  if (code == 0) {
    text << "doctor: " << report.nodes.size() << " node(s) ready\n";
  } else {
    text << "doctor: failed: " << kDoctorChecks[code - kDoctorExitBase] << " (exit " << code << ")";
    for (const auto& node : report.failed_nodes()) text << "; " << node.name;
    text << "\n";
  }
  return text.str();
}

NodeReport node_report_from_json(const nlohmann::json& json, const std::string& where) {
  COHORT_CHECK(json.is_object() && json.contains("node") && json["node"].is_string(), IoError,
               where, ": field 'node' is missing or not a string");
  COHORT_CHECK(json.contains("checks") && json["checks"].is_array() &&
                   json["checks"].size() <= std::size(kDoctorChecks),
               IoError, where, ": field 'checks' is not a list of at most ",
               std::size(kDoctorChecks), " checks");
  NodeReport report{json["node"].get<std::string>(), {}};
  for (const auto& check : json["checks"]) report.checks.push_back(check_from_json(check, where));
  return report;
}

DoctorReport doctor_report_from_json(const nlohmann::json& json, const std::string& where) {
  COHORT_CHECK(json.is_object() && json.contains("nodes") && json["nodes"].is_array(), IoError,
               where, ": field 'nodes' is missing or not a list");
  COHORT_CHECK(json.contains("network"), IoError, where, ": field 'network' is missing");
  DoctorReport report;
  for (const auto& node : json["nodes"]) report.nodes.push_back(node_report_from_json(node, where));
  report.network = check_from_json(json["network"], where);
  return report;
}

DoctorReport read_doctor_report(const std::string& path) {
  constexpr std::size_t kMaxReportBytes = 64u << 20;  // a few KiB per node
  const std::string text = io::read_small_file(path, kMaxReportBytes);
  COHORT_CHECK(json_limits::within_depth(text), IoError, path, ": nested too deeply");
  return doctor_report_from_json(nlohmann::json::parse(text, nullptr, false), path);
}

}  // namespace cohort::ops
