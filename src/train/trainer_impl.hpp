// Trainer::Impl: the trainer's state and steps, shared by trainer.cpp (setup, the loop, evaluation,
// checkpoints and signals) and trainer_step.cpp (one optimizer step: forward, backward, gradient
// synchronisation, clipping, the update).
#pragma once

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cohort/comm/communicator.hpp"
#include "cohort/comm/mpi_session.hpp"
#include "cohort/data/loader.hpp"
#include "cohort/monitor/monitor.hpp"
#include "cohort/train/optim.hpp"
#include "cohort/train/trainer.hpp"
#include "train/checkpointing.hpp"
#include "train/parallelism.hpp"
#include "train/preemption.hpp"

namespace cohort::train {

class Config;

struct Trainer::Impl {
  const Config& config;
  const comm::MpiSession& session;
  std::unique_ptr<comm::Communicator> comm;     // gradients (MPI or NCCL)
  std::unique_ptr<comm::Communicator> control;  // MPI, CPU scalars: loss, signals, metrics
  std::unique_ptr<monitor::Monitor> monitor;    // outlives the checkpoint writer (its events)
  monitor::StepTimer timer;
  std::unique_ptr<data::DataLoader> loader;
  std::unique_ptr<Parallelism> parallel;  // this rank's share of the model, its groups, DDP
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<LrSchedule> schedule;
  std::unique_ptr<TrainCheckpoints> checkpoints;
  std::unique_ptr<Preemption> preemption;
  std::FILE* progress = stdout;
  std::int64_t accumulation = 1, total_steps = 0;
  bool limited_by_steps = false;  // train.max_steps ends the run before train.epochs do
  bool bf16 = false;              // train.precision = bf16: autocast forward passes
  bool cuda = false;              // the model lives on a GPU
  TrainSummary summary;

  Impl(const Config& c, const comm::MpiSession& s) : config(c), session(s) {}
  void setup();
  double step(const std::vector<data::Batch>& micro, std::int64_t index);
  double pipeline_step(const data::Batch& batch);
  void build_model(const data::DatasetInfo& info);
  bool evaluate_and_check(std::int64_t step);
  std::optional<ResumePoint> resume();
  void start_monitor(bool append);
  void report_step(std::int64_t step, std::int64_t epoch);
  void log(nlohmann::json record) { monitor->event(std::move(record)); }
  void say(const std::string& line) { monitor->say(line); }
  void stop_for_signal(int signal, std::int64_t step);
  double grad_norm(double clip, std::int64_t index);
  double clip_norm = 0;                // optim.clip_norm
  std::int64_t grad_norm_every = 1;    // monitor.grad_norm_every
  std::int64_t tokens_per_sample = 0;  // token models: seq_len
  double last_grad_norm = 0;
  double grad_norm_seconds = 0;  // spent on norms only the monitor wanted
  double flops_per_sample = 0;   // the whole model's
  std::int64_t parameters = 0;   // the whole model's
  bool slow = false;             // debug.slow_rank: this rank sleeps debug.slow_ms per step
};

}  // namespace cohort::train
