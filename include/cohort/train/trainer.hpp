// Trainer: the training loop of `cohort train`, on every rank.
//
// One step: accumulation x (next batch, forward, loss, backward) — all but the last inside DDP's
// no_sync, so gradients are summed locally and all-reduced once — then clipping, the scheduled
// learning rate and the optimizer step. The step's loss is all-reduced (every rank sees the same
// value, so a NaN/Inf stops every rank at the same step with TrainingError, exit code 4).
// Evaluation (every train.eval_every steps, or after each epoch) splits the validation set into
// contiguous per-rank ranges and all-reduces loss sums and counts: the figures are exact and the
// same on every rank, and so is the early-stop decision. Rank 0 writes <run_dir>/
// config.resolved.ini and metrics.jsonl and prints grep-friendly progress lines.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/models/eval_result.hpp"

namespace cohort::comm {
class MpiSession;
}
namespace cohort::env {
class Environment;
}

namespace cohort::settings {
class Config;
}  // namespace cohort::settings

namespace cohort::train {

using settings::Config;

// Why a run ended.
enum class StopReason {
  kEpochs,         // train.epochs done
  kMaxSteps,       // train.max_steps reached first
  kTargetReached,  // train.target_metric reached train.target_value
  kEarlyStop,      // train.early_stop_patience evaluations without improvement
  kSignal,         // a signal of slurm.signals: checkpointed, resumable
  kTimeLimit,      // slurm.time_margin before the job's time limit: checkpointed, resumable
};

struct TrainSummary {
  std::int64_t steps = 0;
  std::int64_t epochs = 0;  // epochs begun
  double last_loss = 0;
  bool evaluated = false;
  EvalResult eval;
  double seconds = 0;
  double samples_per_s = 0;  // all ranks, over the whole run
  // All ranks, after the first 3 steps and without evaluation time (0 for shorter runs): the
  // figure benchmarks compare.
  double steady_samples_per_s = 0;
  // This rank's time in monitoring: the monitor's own calls and the gradient norms it asked for.
  double monitor_seconds = 0;
  StopReason stop_reason = StopReason::kEpochs;
  int stop_signal = 0;     // kSignal: which one
  bool resumable = false;  // stopped by a signal after a checkpoint: exit code 75
  int ranks = 1;
  int threads = 1;            // torch intra-op threads per rank
  int blas_threads = 0;       // OpenBLAS threads per rank (0: not OpenBLAS)
  std::string malloc_tuning;  // the allocator policy in force (comm::tune_allocator)
  std::string launcher;       // who started the ranks: "slurm step", "open mpi", ...
  std::string config_hash;
};

// "epochs", "max_steps", "target reached", "SIGUSR1", "time limit": the summary's and
// metrics.jsonl's stop_reason.
std::string stop_reason_text(const TrainSummary& summary);

class Trainer {
 public:
  // `launcher` names who started the ranks, for the logs (env::to_string of the topology's
  // launcher, detected before MPI starts: MPI_Init itself sets launcher variables).
  Trainer(const Config& config, const comm::MpiSession& session,
          std::string launcher = "unknown");  // collective
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Progress and evaluation lines go to `progress` on rank 0 (stderr when stdout carries JSON).
  TrainSummary run(std::FILE* progress = stdout);  // collective

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// torch threads for this rank: train.threads, else SLURM_CPUS_PER_TASK of `environment`, else the
// node's cores divided among its local ranks.
int threads_per_rank(std::int64_t configured, int local_ranks, const env::Environment& environment);

}  // namespace cohort::train
