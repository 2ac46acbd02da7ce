#include "cohort/slurm/job.hpp"

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "cohort/env/topology.hpp"
#include "slurm/slurm_check.hpp"

namespace cohort::slurm {
namespace detail {

void throw_slurm_error(const char* call, int rc) {
  // libslurm reports through errno (slurm_get_errno(), which only returned errno, left in 23.11).
  const int code = rc == -1 ? errno : rc;
  COHORT_THROW(SlurmError, call, " failed: ", slurm_strerror(code), " (", code, ")");
}

void init_library() {
  static std::once_flag once;
  std::call_once(once, [] { slurm_init(nullptr); });
}

void init_once() {
  init_library();
  // A throw leaves the flag unset: the next call asks the controller again.
  static std::once_flag checked;
  std::call_once(checked, require_rpc_window);
}

JobInfo load_job(const std::string& job_id) {
  init_once();
  char* end = nullptr;
  const unsigned long id = std::strtoul(job_id.c_str(), &end, 10);
  COHORT_CHECK(!job_id.empty() && end != nullptr && *end == '\0', SlurmError, "job id '", job_id,
               "' is not a number");
  job_info_msg_t* raw = nullptr;
  COHORT_SLURM_CHECK(slurm_load_job(&raw, static_cast<std::uint32_t>(id), SHOW_DETAIL));
  JobInfo info(raw);
  COHORT_CHECK(info && info->record_count >= 1, SlurmError, "slurm_load_job(", job_id,
               ") returned no job");
  return info;
}

}  // namespace detail

namespace {

struct ArrayRespFree {
  void operator()(job_array_resp_msg_t* resp) const noexcept { slurm_free_job_array_resp(resp); }
};

// Each cause's name in the log line, the key of its budget, and the budget.
struct CauseBudget {
  const char* noun;
  const char* key;
  int max;
};

CauseBudget budget_of(RestartCause cause, const RestartBudgets& b) {
  switch (cause) {
    case RestartCause::kPreemption:
      return {"preemption", "slurm.max_preemptions", b.max_preemptions};
    case RestartCause::kFailure:
      return {"failure", "slurm.max_failures", b.max_failures};
    case RestartCause::kPreflight:
      break;
  }
  return {"pre-flight requeue", "slurm.max_preflight_requeues", b.max_preflight_requeues};
}

}  // namespace

JobIdentity current_job(const env::Environment& environment) {
  JobIdentity job;
  const auto slurm = env::read_slurm_job(environment);  // the one reader of the job's identity
  job.in_job = slurm.has_value();
  if (!job.in_job) return job;
  job.job_id = slurm->job_id;
  job.target = slurm->array_job_id && slurm->array_task_id
                   ? *slurm->array_job_id + "_" + *slurm->array_task_id
                   : job.job_id;
  job.restart_count = slurm->restart_count;
  return job;
}

std::optional<std::time_t> job_end_time(const std::string& job_id) {
  const detail::JobInfo info = detail::load_job(job_id);
  const slurm_job_info_t& job = info->job_array[0];
  if (job.time_limit == INFINITE || job.time_limit == NO_VAL || job.end_time == 0) {
    return std::nullopt;
  }
  return job.end_time;
}

void requeue(const std::string& target) {
  detail::init_once();
  std::vector<char> id(target.begin(), target.end());
  id.push_back('\0');
  job_array_resp_msg_t* raw = nullptr;
  COHORT_SLURM_CHECK(slurm_requeue2(id.data(), 0, &raw));
  const std::unique_ptr<job_array_resp_msg_t, ArrayRespFree> resp(raw);
  for (std::uint32_t i = 0; resp && i < resp->job_array_count; ++i) {
    const int code = static_cast<int>(resp->error_code[i]);
    COHORT_CHECK(code == 0, SlurmError, "slurm_requeue2(", target, ") failed for ",
                 resp->job_array_id[i], ": ", slurm_strerror(code), " (", code, ")");
  }
}

namespace {

// The checks a requeue and a restart in the allocation share: the job, slurm.requeue,
// slurm.max_restarts (SLURM_RESTART_COUNT and the ledger's restarts in the allocation) and the
// cause's budget. A refusal's text, or "" with the ledger and the count used so far.
struct BudgetCheck {
  std::string refusal;
  RestartLedger ledger;
  std::int64_t used = 0;
  CauseBudget budget{};
};

BudgetCheck check_budget(const JobIdentity& job, const RestartBudgets& budgets,
                         RestartCause cause) {
  BudgetCheck check;
  std::ostringstream text;
  if (!job.in_job || !budgets.requeue) {
    check.refusal = "stopping to be resumed (exit code 75)";
    return check;
  }
  // Without a ledger (a library user's own launcher) every restart counts against each budget.
  check.ledger =
      budgets.ledger.empty() ? RestartLedger{} : RestartLedger::load(budgets.ledger, job.job_id);
  if (budgets.ledger.empty()) check.ledger.count(cause) = job.restart_count;
  const std::int64_t restarts = job.restart_count + check.ledger.in_allocation;
  if (budgets.max_restarts >= 0 && restarts >= budgets.max_restarts) {
    text << "restart budget spent (" << restarts << "/" << budgets.max_restarts
         << " restarts, slurm.max_restarts): not requeueing job " << job.target;
    check.refusal = text.str();
    return check;
  }
  check.budget = budget_of(cause, budgets);
  check.used = check.ledger.count(cause);
  if (check.budget.max >= 0 && check.used >= check.budget.max) {
    text << check.budget.noun << " budget spent (" << check.used << "/" << check.budget.max << " "
         << check.budget.noun << "s, " << check.budget.key << "): not requeueing job "
         << job.target;
    check.refusal = text.str();
  }
  return check;
}

// "(failure 2/3)", "(preemption 4, no limit)".
std::string count_text(const BudgetCheck& check) {
  std::ostringstream text;
  text << "(" << check.budget.noun << " " << check.used + 1;
  if (check.budget.max >= 0) {
    text << "/" << check.budget.max << ")";
  } else {
    text << ", no limit)";
  }
  return text.str();
}

}  // namespace

RequeueOutcome requeue_within_budget(const JobIdentity& job, const RestartBudgets& budgets,
                                     RestartCause cause, bool act,
                                     const std::optional<FailurePoint>& failure) {
  auto check = check_budget(job, budgets, cause);
  if (!check.refusal.empty()) return {false, check.refusal};
  try {
    if (act) requeue(job.target);
  } catch (const SlurmError& e) {  // said, not swallowed: the caller stops resumable
    return {false, "could not requeue job " + job.target + ": " + e.what() +
                       "; stopping to be resumed (exit code 75)"};
  }
  if (act && !budgets.ledger.empty()) {
    check.ledger.record(cause, failure);
    check.ledger.save(budgets.ledger);
  }
  return {true, "requeued job " + job.target + " " + count_text(check)};
}

RequeueOutcome restart_within_budget(const JobIdentity& job, const RestartBudgets& budgets,
                                     bool act, const FailurePoint& failure) {
  auto check = check_budget(job, budgets, RestartCause::kFailure);
  if (!check.refusal.empty()) {
    const std::string requeueing = "not requeueing";
    if (const auto at = check.refusal.find(requeueing); at != std::string::npos) {
      check.refusal.replace(at, requeueing.size(), "not restarting");
    }
    return {false, check.refusal};
  }
  if (act && !budgets.ledger.empty()) {
    check.ledger.record(RestartCause::kFailure, failure);
    ++check.ledger.in_allocation;
    check.ledger.save(budgets.ledger);
  }
  return {true, "restarting in job " + job.target + " " + count_text(check)};
}

}  // namespace cohort::slurm
