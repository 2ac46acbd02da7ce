// Preemption: stop at a step boundary with a checkpoint when a signal arrives, and come back.
//
// Protocol: the constructor installs a handler for each signal of slurm.signals (default SIGUSR1
// and SIGTERM: `#SBATCH --signal=USR1@N` for the steps, or `B:USR1@N` forwarded by the batch
// script, and Slurm's own SIGTERM at the time limit or on scancel); the handler only stores the
// signal number in a lock-free atomic. After every optimizer step the trainer calls
// agreed_signal(): a one-element max all-reduce on the training communicator, so every rank sees
// the same answer at the same step and no rank checkpoints alone. When it is non-zero the trainer
// saves a synchronous checkpoint and calls come_back(): rank 0 requeues the Slurm job through
// libslurm (slurm.requeue, within slurm.max_preemptions and slurm.max_restarts), and the
// process exits with ExitCode::kResumable (75). The destructor restores the previous handlers.
//
// Wall time: inside a Slurm job with a time limit, rank 0 reads the job's end time through
// libslurm at start-up; once fewer than slurm.time_margin seconds are left, rank 0 raises
// kWallTime in the same agreement, and the run stops exactly as for a signal, whether or not
// the job asked Slurm for one.
#pragma once

#include <chrono>
#include <csignal>
#include <optional>
#include <string>
#include <vector>

#include "cohort/comm/communicator.hpp"
#include "cohort/ops/decisions.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/slurm/job.hpp"
#include "settings/signals.hpp"

namespace cohort::ops {

// What happens after a stop for a signal: requeued (rank 0 asked Slurm) or not, and the line that
// says so ("SIGUSR1 at step 40: checkpoint saved; requeued job 12 (preemption 1, no limit)").
struct ComeBack {
  bool requeued = false;
  std::string line;
};

class Preemption {
 public:
  static constexpr int kWallTime = ops::kWallTime;  // not a signal: the time limit is near

  Preemption(const settings::SlurmConfig& options, slurm::RestartBudgets budgets,
             comm::Communicator& comm);
  ~Preemption();
  Preemption(const Preemption&) = delete;
  Preemption& operator=(const Preemption&) = delete;

  // Collective: the signal some rank received (the highest number), kWallTime, or 0.
  int agreed_signal();
  // After the checkpoint, on every rank: rank 0 requeues when it should. Says what happens next
  // (rank 0 prints the line; the other ranks' answer is the same but for the requeue itself).
  ComeBack come_back(int signal, std::int64_t step);

 private:
  void arm_deadline();
  settings::SlurmConfig options_;
  slurm::RestartBudgets budgets_;
  comm::Communicator& comm_;
  std::vector<std::pair<int, struct sigaction>> previous_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;  // rank 0 only
  bool agree_ = false;  // anything to agree on: signals, or a deadline on rank 0
};

// signal_name(), or "time limit" for kWallTime.
std::string signal_name_or_deadline(int signal);

}  // namespace cohort::ops
