// Preemption: stop at a step boundary with a checkpoint when a signal arrives, and come back.
//
// Protocol: the constructor installs a handler for each signal of slurm.signals (default SIGUSR1
// and SIGTERM: `#SBATCH --signal=USR1@N` for the steps, or `B:USR1@N` forwarded by the batch
// script, and Slurm's own SIGTERM at the time limit or on scancel); the handler only stores the
// signal number in a lock-free atomic. After every optimizer step the trainer calls
// agreed_signal(): a one-element max all-reduce on the training communicator, so every rank sees
// the same answer at the same step and no rank checkpoints alone. When it is non-zero the trainer
// saves a synchronous checkpoint and calls come_back(): rank 0 requeues the Slurm job through
// libslurm (slurm.requeue, and only while SLURM_RESTART_COUNT < slurm.max_restarts), and the
// process exits with ExitCode::kResumable (75). The destructor restores the previous handlers.
#pragma once

#include <csignal>
#include <string>
#include <vector>

#include "cohort/comm/communicator.hpp"

namespace cohort::train {

class Config;

class Preemption {
 public:
  Preemption(const Config& config, comm::Communicator& comm);
  ~Preemption();
  Preemption(const Preemption&) = delete;
  Preemption& operator=(const Preemption&) = delete;

  // Collective: the signal some rank received (the highest number), or 0.
  int agreed_signal();
  // After the checkpoint, on every rank: rank 0 requeues when it should. Returns the line that
  // says what happens next (printed by rank 0).
  std::string come_back(int signal, std::int64_t step);

 private:
  const Config& config_;
  comm::Communicator& comm_;
  std::vector<std::pair<int, struct sigaction>> previous_;
};

// "USR1,TERM" -> {SIGUSR1, SIGTERM}; ConfigError naming slurm.signals for an unknown name.
std::vector<int> parse_signals(const std::string& text);
std::string signal_name(int signal);  // "SIGUSR1"

}  // namespace cohort::train
