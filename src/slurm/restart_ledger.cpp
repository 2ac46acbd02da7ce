#include "cohort/slurm/restart_ledger.hpp"

#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "common/json_limits.hpp"

namespace cohort::slurm {
namespace {

// A real ledger is a hundred bytes; anything near this is not one.
constexpr std::size_t kMaxLedgerBytes = 64 * 1024;

std::int64_t count_field(const nlohmann::json& record, const char* name, const std::string& path) {
  if (!record.contains(name)) return 0;
  const auto& value = record.at(name);
  COHORT_CHECK(value.is_number_integer() && value.get<std::int64_t>() >= 0 &&
                   value.get<std::int64_t>() < std::numeric_limits<std::int32_t>::max(),
               IoError, path, ": field '", name, "' is not a count");
  return value.get<std::int64_t>();
}

std::optional<FailurePoint> failure_field(const nlohmann::json& record, const std::string& path) {
  if (!record.contains("last_failure") || record.at("last_failure").is_null()) return std::nullopt;
  const auto& failure = record.at("last_failure");
  COHORT_CHECK(failure.is_object() && failure.contains("checkpoint") &&
                   failure.at("checkpoint").is_string() && failure.contains("step") &&
                   failure.at("step").is_number_integer() &&
                   failure.at("step").get<std::int64_t>() >= -1,
               IoError, path, ": field 'last_failure' is not {\"checkpoint\": ..., \"step\": ...}");
  return FailurePoint{failure.at("checkpoint").get<std::string>(),
                      failure.at("step").get<std::int64_t>()};
}

}  // namespace

std::string ledger_path(const std::string& run_dir) { return run_dir + "/restarts.json"; }

RestartLedger RestartLedger::load(const std::string& path, const std::string& job_id) {
  RestartLedger ledger;
  ledger.job = job_id;
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return ledger;
  const std::string text = io::read_small_file(path, kMaxLedgerBytes);
  COHORT_CHECK(json_limits::within_depth(text), IoError, path, ": nested too deeply");
  const auto record = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  COHORT_CHECK(record.is_object(), IoError, path, ": not a JSON object (a restart ledger)");
  COHORT_CHECK(record.contains("job") && record.at("job").is_string(), IoError, path,
               ": field 'job' is missing or not a string");
  if (record.at("job").get<std::string>() != job_id) return ledger;  // another job's budgets
  ledger.preemptions = count_field(record, "preemptions", path);
  ledger.failures = count_field(record, "failures", path);
  ledger.preflight_requeues = count_field(record, "preflight_requeues", path);
  ledger.in_allocation = count_field(record, "in_allocation", path);  // absent before spares
  ledger.step_nodes = count_field(record, "step_nodes", path);
  ledger.last_failure = failure_field(record, path);
  return ledger;
}

void RestartLedger::save(const std::string& path) const {
  nlohmann::json record = {{"job", job},
                           {"preemptions", preemptions},
                           {"failures", failures},
                           {"preflight_requeues", preflight_requeues},
                           {"in_allocation", in_allocation},
                           {"step_nodes", step_nodes},
                           {"last_failure", nullptr}};
  if (last_failure) {
    record["last_failure"] = {{"checkpoint", last_failure->checkpoint},
                              {"step", last_failure->step}};
  }
  io::write_file_atomically(path, record.dump() + "\n");
}

std::int64_t& RestartLedger::count(RestartCause cause) {
  switch (cause) {
    case RestartCause::kPreemption:
      return preemptions;
    case RestartCause::kFailure:
      return failures;
    case RestartCause::kPreflight:
      break;
  }
  return preflight_requeues;
}

void RestartLedger::record(RestartCause cause, const std::optional<FailurePoint>& failure) {
  ++count(cause);
  if (cause == RestartCause::kFailure) {
    last_failure = failure;
  } else if (cause == RestartCause::kPreemption) {
    last_failure.reset();
  }
}

bool crash_loop(const std::optional<FailurePoint>& previous, const FailurePoint& now) {
  return previous && previous->checkpoint == now.checkpoint;
}

}  // namespace cohort::slurm
