// Trainer::Impl: the trainer's components and the steps of its loop, shared by trainer.cpp (setup,
// the loop, evaluation, checkpoints and signals) and trainer_step.cpp (one optimizer step: forward,
// backward, gradient synchronisation, clipping, the update).
//
// The components, in build order (destroyed in reverse): the communicators, this rank's share of
// the model with its groups (Parallelism), the loader, the optimizer and its schedule, the
// checkpoints, preemption and the monitor. Settings reach them once, from the typed config, in
// setup(); the loop reads the typed config and what setup() worked out from it (the plan, the
// step settings).
#pragma once

#include <torch/optim/optimizer.h>

#include <chrono>
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
#include "cohort/env/system_info.hpp"
#include "cohort/models/model.hpp"
#include "cohort/monitor/monitor.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/train/metric_watch.hpp"
#include "cohort/train/optim.hpp"
#include "cohort/train/trainer.hpp"
#include "models/task.hpp"
#include "ops/preemption.hpp"
#include "train/checkpointing.hpp"
#include "train/parallelism.hpp"
#include "train/steady_clock.hpp"

namespace cohort::train {

// The run's shape, worked out once by setup().
struct RunPlan {
  std::int64_t total_steps = 0;   // train.epochs' worth, or train.max_steps when fewer
  bool limited_by_steps = false;  // train.max_steps ends the run before train.epochs do
  std::int64_t accumulation = 1;  // micro-batches per optimizer step
  std::int64_t batch_size = 0;    // per replica and micro-batch
  int replicas = 1;               // data-parallel size
  std::int64_t samples_per_step() const { return accumulation * batch_size * replicas; }
};

// How one optimizer step runs.
struct StepSettings {
  bool bf16 = false;  // train.precision = bf16: autocast forward passes
  bool cuda = false;  // the model lives on a GPU
  double clip_norm = 0;
  std::int64_t grad_norm_every = 1;    // for the monitor, when not clipping
  std::int64_t slow_ms = 0;            // debug.slow_rank is this rank: sleep this long per step
  std::int64_t device_fault_step = 0;  // debug.device_fault_rank is this rank: fail at this step
};

// What the monitor is told about the model.
struct ModelFacts {
  double flops_per_sample = 0;         // the whole model's
  std::int64_t parameters = 0;         // the whole model's
  std::int64_t frozen = 0;             // of them, those model.freeze keeps as they are
  std::int64_t held_statistics = 0;    // modules whose running statistics model.freeze keeps
  std::int64_t tokens_per_sample = 0;  // token models: seq_len
  std::int64_t trained_here = 0;       // parameters this rank's optimizer steps (ZeRO: its shard)
  std::int64_t trained_stage = 0;      // of the trainable parameters of this rank's stage/part
};

// Where the training loop is, and whether (and why) it stops.
struct LoopState {
  using Clock = std::chrono::steady_clock;
  std::int64_t first_step = 0;  // where this start began (a resumed run: the checkpoint's step)
  std::int64_t step = 0;
  std::int64_t evaluated_at = -1;
  std::optional<StopReason> stop;
  SteadyClock steady;
};

struct Trainer::Impl {
  const Config& config;  // typed; the components got their option structs from it in setup()
  const comm::MpiSession& session;
  // First, so that they outlive every part that holds them (members go in reverse order).
  struct Communicators {
    std::unique_ptr<comm::Communicator> gradients;  // MPI or NCCL
    std::unique_ptr<comm::Communicator> control;    // MPI, CPU scalars: loss, signals, metrics
  } comms;
  std::unique_ptr<monitor::Monitor> monitor;  // outlives the checkpoint writer (its events)
  monitor::StepTimer timer;
  std::unique_ptr<Parallelism> parallel;  // this rank's share of the model, its groups, DDP
  std::unique_ptr<data::DataLoader> loader;
  std::unique_ptr<Task> task;  // from train.* and the training set, in build_model()
  // What steps the model: the optimizer over this rank's parameters (or shard pieces), the
  // learning-rate schedule, and the last step's gradient norm.
  struct Optimization {
    std::unique_ptr<torch::optim::Optimizer> optimizer;
    std::unique_ptr<LrSchedule> schedule;
    std::vector<double> lr_scales;  // per optimizer group (optim.lr_scale)
    double last_grad_norm = 0;
    double grad_norm_seconds = 0;  // spent on norms only the monitor wanted
  } optimization;
  std::unique_ptr<TrainCheckpoints> checkpoints;
  std::unique_ptr<MetricWatch> watch;  // best checkpoints, early stopping (trainer_watch.cpp)
  std::unique_ptr<ops::Preemption> preemption;
  RunPlan plan;
  StepSettings settings;
  ModelFacts facts;
  bool activations_reported = false;  // the memory record (host only), once per start
  std::FILE* progress = stdout;
  TrainSummary summary;

  Impl(const Config& c, const comm::MpiSession& s)
      : config(c),
        session(s),
        started{env::seconds_since_process_start(), Clock::now(), {}, 0, {}} {}

  // setup (trainer.cpp)
  void setup();
  void set_process_settings();
  RankDevice make_communicators();
  void make_optimization();
  void make_checkpoints();
  void make_loader();
  void build_model(const data::DatasetInfo& info);
  ModelInput model_input(const data::DatasetInfo& info) const;
  std::vector<std::shared_ptr<torch::nn::Module>> freeze(Model& model);
  void attach_model(std::shared_ptr<Model> model, const ModelInput& input, bool own);
  void check_model_output(Model& model, const at::Tensor& sample, bool skeleton);
  bool init_from(Model& model);
  // What the model was first built from; `generator` undefined: its values cannot be made again
  // (model.init_from read, or a rank's own part materialised). initial_values.cpp.
  struct InitialValues {
    ModelInput input;
    at::Tensor generator;            // the CPU generator's state before the model was built
    std::string init_line;           // model.init_from's report, said before the first step
    bool init_from_skipped = false;  // model.init_from not read: the run was to resume
    void record(const ModelInput& built_from);  // just before it is built
  } initial;
  void remake_initial_values();
  void init_from_after_all();
  void plan_run();
  // the loop (trainer.cpp)
  TrainSummary run();
  void run_epoch(LoopState& loop, std::int64_t epoch);
  int evaluate_now(LoopState& loop);
  void stop_on_signal(LoopState& loop, int signal);
  TrainSummary finish(const LoopState& loop, LoopState::Clock::time_point start);
  void print_banner() const;
  std::optional<ResumePoint> resume();
  void start_monitor(std::optional<std::int64_t> resumed_at);
  void report_step(std::int64_t step, std::int64_t epoch);
  std::optional<StopReason> evaluate_and_check(std::int64_t step, int& stopped_by);
  // best checkpoints and early stopping (trainer_watch.cpp)
  void make_watch();
  bool watch_evaluation(std::int64_t step, const EvalResult& result);
  bool evaluation_due(std::int64_t step) const;
  void evaluate_again_after_resume(LoopState& loop);
  void stop_for_signal(int signal, std::int64_t step);
  void log(nlohmann::json record) { monitor->event(std::move(record)); }
  void say(const std::string& line) { monitor->say(line); }
  // one step (trainer_step.cpp)
  double step(const std::vector<data::Batch>& micro, std::int64_t index);
  double update(double local, std::int64_t index);
  double pipeline_step(const data::Batch& batch, std::int64_t index);
  double grad_norm(std::int64_t index);
  void report_activations(std::int64_t bytes, std::int64_t index);
  // Every rank's peak resident memory so far (`value`: this rank's figure to gather instead).
  std::vector<std::int64_t> peak_rss_of_ranks(std::int64_t value = -1);
  std::int64_t startup_peak_rss = 0;  // after the model is built and attached
  // The time from this process's exec to its first step, in parts: metrics.jsonl's "startup"
  // record (what a requeued job loses before it trains again).
  using Clock = std::chrono::steady_clock;
  struct StartupTimes {
    double to_trainer_s = 0;       // exec to here: LibTorch, MPI_Init, a rendezvous
    Clock::time_point trainer;     // the trainer's construction
    Clock::time_point setup_done;  // communicators, data opened, model built and attached
    double checkpoint_load_s = 0;  // the checkpoint found, verified and loaded (0: none)
    Clock::time_point resumed;     // and the loader repositioned
  } started;
  void report_startup(std::int64_t first_step);  // and the restart that led here, if any
};

}  // namespace cohort::train
