#include "ops/preemption.hpp"

#include <ATen/ops/tensor.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <sstream>
#include <utility>

#include "cohort/error.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/slurm/job.hpp"

namespace cohort::ops {

// The run's settings by their own names.
using namespace ::cohort::settings;  // NOLINT(google-build-using-namespace)

namespace {

// Written by the handler, read at step boundaries. Lock-free, so async-signal-safe.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_signal(int signal) { g_signal.store(signal, std::memory_order_relaxed); }

}  // namespace

std::string signal_name_or_deadline(int signal) {
  return signal == Preemption::kWallTime ? "time limit" : signal_name(signal);
}

Preemption::Preemption(const SlurmConfig& options, slurm::RestartBudgets budgets,
                       comm::Communicator& comm)
    : options_(options), budgets_(std::move(budgets)), comm_(comm) {
  g_signal.store(0);
  for (const int signal : parse_signals(options.signals)) {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    struct sigaction old {};
    COHORT_CHECK(sigaction(signal, &action, &old) == 0, EnvironmentError, "sigaction(",
                 signal_name(signal), ") failed");
    previous_.emplace_back(signal, old);
  }
  arm_deadline();
  at::Tensor any = at::tensor({static_cast<std::int64_t>(previous_.empty() && !deadline_ ? 0 : 1)});
  comm::CollectiveOptions max;
  max.op = comm::ReduceOp::kMax;
  comm_.all_reduce(any, max);  // every rank takes part in the agreements, or none does
  agree_ = any.item<std::int64_t>() != 0;
}

// Rank 0, inside a Slurm job with a time limit: stop slurm.time_margin seconds before it.
void Preemption::arm_deadline() {
  const std::int64_t margin = options_.time_margin;
  const auto job = slurm::current_job(env::Environment::from_process());
  if (comm_.rank() != 0 || margin <= 0 || !job.in_job) return;
  std::optional<std::time_t> end;
  try {
    end = slurm::job_end_time(job.job_id);
  } catch (const SlurmError& e) {  // training goes on; only the early stop is lost
    std::fprintf(stderr,
                 "cohort: warning: slurm.time_margin: cannot read the time limit of job %s: %s\n",
                 job.job_id.c_str(), e.what());
    return;
  }
  if (!end) return;
  const auto left = static_cast<std::int64_t>(*end - std::time(nullptr));
  if (left <= margin) {
    std::fprintf(stderr,
                 "cohort: warning: job %s has %lld s left, not more than slurm.time_margin (%lld "
                 "s): no early stop\n",
                 job.job_id.c_str(), static_cast<long long>(left), static_cast<long long>(margin));
    return;
  }
  deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(left - margin);
}

Preemption::~Preemption() {
  for (const auto& [signal, old] : previous_) sigaction(signal, &old, nullptr);
}

int Preemption::agreed_signal() {
  if (!agree_) return 0;
  std::int64_t mine = g_signal.load();
  if (mine == 0 && deadline_ && std::chrono::steady_clock::now() >= *deadline_) mine = kWallTime;
  at::Tensor flag = at::tensor({mine}, at::kLong);
  comm::CollectiveOptions max;
  max.op = comm::ReduceOp::kMax;
  comm_.all_reduce(flag, max);
  return static_cast<int>(flag.item<std::int64_t>());
}

ComeBack Preemption::come_back(int signal, std::int64_t step) {
  const auto job = slurm::current_job(env::Environment::from_process());
  const auto outcome = slurm::requeue_within_budget(job, budgets_, slurm::RestartCause::kPreemption,
                                                    comm_.rank() == 0);
  return {outcome.requeued, come_back_line(signal, step, options_.time_margin, outcome.text)};
}

}  // namespace cohort::ops
