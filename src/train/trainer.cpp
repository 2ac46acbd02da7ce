#include "cohort/train/trainer.hpp"

#include <ATen/Parallel.h>
#include <ATen/ops/tensor.h>
#include <torch/optim/optimizer.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <utility>

#include "cohort/ckpt/inspect.hpp"
#include "cohort/comm/allocator.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/data/loader.hpp"
#include "cohort/ddp/distributed_data_parallel.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/files.hpp"
#include "cohort/monitor/monitor.hpp"
#include "cohort/ops/supervision.hpp"
#include "cohort/ops/torch_runtime.hpp"
#include "cohort/pipeline/stage.hpp"
#include "cohort/pipeline/tensor_parallel.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/train/monitoring.hpp"
#include "cohort/train/optim.hpp"
#include "models/init_weights.hpp"
#include "models/materialize.hpp"
#include "ops/preemption.hpp"
#include "train/checkpointing.hpp"
#include "train/parallelism.hpp"
#include "train/run_module.hpp"
#include "train/step.hpp"
#include "train/trainer_impl.hpp"

namespace cohort::train {

namespace {

std::vector<std::pair<std::string, at::Tensor>> named_parameters(torch::nn::Module& module) {
  std::vector<std::pair<std::string, at::Tensor>> named;
  for (const auto& p : module.named_parameters()) named.emplace_back(p.key(), p.value());
  return named;
}

}  // namespace

int threads_per_rank(std::int64_t configured, int local_ranks,
                     const env::Environment& environment) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // More threads than the node has cores only spin against each other (a run with 4096 stalled).
  COHORT_CHECK(configured <= cores, ConfigError, "train.threads = ", configured,
               " is more than the ", cores, " cores of this node");
  if (configured > 0) return static_cast<int>(configured);
  // Slurm's own view of the task's CPUs (an unparsable value is an EnvironmentError, exit 2).
  if (const auto cpus = environment.get_int("SLURM_CPUS_PER_TASK", 1, 1L << 20)) {
    return static_cast<int>(std::min<long>(*cpus, cores));
  }
  return std::max(1, cores / std::max(1, local_ranks));
}

void Trainer::Impl::setup() {
  ops::guard_convolutions();  // as cohort's main does, for programs of their own
  set_process_settings();
  RankDevice device = make_communicators();
  parallel = std::make_unique<Parallelism>(config.parallel, std::move(device), config.model.name,
                                           *comms.gradients, session.node_size());
  parallel->check_tensor_groups(*comms.control);
  make_loader();
  keep_run_module(config, session.rank());
  build_model(loader->info());
  make_optimization();
  plan_run();
  optimization.schedule = std::make_unique<LrSchedule>(config.optim, plan.total_steps);
  make_checkpoints();
  preemption =
      std::make_unique<ops::Preemption>(config.slurm, ops::restart_budgets(config), *comms.control);
  started.setup_done = Clock::now();
}

// The process's threads, BLAS pool and allocator, and the step's settings from the config.
void Trainer::Impl::set_process_settings() {
  summary.ranks = session.size();
  summary.threads =
      threads_per_rank(config.train.threads, session.node_size(), env::Environment::from_process());
  at::set_num_threads(summary.threads);
  // One by default: OpenBLAS's own pool spinning next to torch's OpenMP threads oversubscribed
  // the cores (the benchmark MLP ran 2.2x slower with 2 + 2 threads on 2 cores than with 2 + 1);
  // docs/performance.md has the matrix.
  const std::int64_t blas = config.train.blas_threads;
  summary.blas_threads = env::set_blas_threads(blas > 0 ? static_cast<int>(blas) : summary.threads);
  summary.malloc_tuning = comm::tune_allocator(config.train.malloc_tuning).reason;
  summary.config_hash = config.hash();
  settings.bf16 = config.train.precision == Precision::kBf16;
  settings.clip_norm = config.optim.clip_norm;
  settings.grad_norm_every = config.monitor.grad_norm_every;
  settings.slow_ms = config.debug.slow_rank == session.rank() ? config.debug.slow_ms : 0;
  settings.device_fault_step =
      config.debug.device_fault_rank == session.rank() ? config.debug.device_fault_step : 0;
}

// This rank's device, then the two communicators: control (MPI), over which the ranks agree that
// every one has its GPU before NCCL starts, and the gradients' (MPI or NCCL).
RankDevice Trainer::Impl::make_communicators() {
  std::exception_ptr refused;  // this rank's GPU, NCCL's: agreed over control before comm starts
  RankDevice device = start_rank_device(config.parallel, session, refused);  // before CUDA work
  torch::manual_seed(static_cast<std::uint64_t>(config.train.seed));
  comm::CommOptions comm_options;
  comm_options.timeout = std::chrono::seconds(config.parallel.timeout_s);
  comms.control = comm::make_communicator(session, comm::Backend::kMpi, comm_options);
  const bool nccl = config.parallel.backend == GradBackend::kNccl;
  if (nccl) agree_rank_devices(*comms.control, refused);
  comms.gradients = comm::make_communicator(
      session, nccl ? comm::Backend::kNccl : comm::Backend::kMpi, comm_options);
  return device;
}

// The optimizer over what this rank steps (its parameters, or its ZeRO shard pieces), in groups by
// optim.lr_scale; the parameters it steps counted for the monitor.
void Trainer::Impl::make_optimization() {
  const auto groups = group_parameters(parallel->optimized(), config.optim.lr_scale, false);
  for (const auto& group : groups.params) {
    for (const auto& p : group) facts.trained_here += p.numel();
  }
  for (const auto& p : parallel->trained().parameters()) {
    if (p.requires_grad()) facts.trained_stage += p.numel();
  }
  optimization.lr_scales = groups.lr_scales;
  optimization.optimizer = make_optimizer(config.optim, groups);
}

// The run's checkpoints (and with them the best-checkpoint watch) over the trained module and the
// optimizer: the layout a reshard needs, what a save takes, and under ZeRO the shard pieces.
void Trainer::Impl::make_checkpoints() {
  checkpoints = std::make_unique<TrainCheckpoints>(config, summary.config_hash, session,
                                                   parallel->trained(), *optimization.optimizer);
  checkpoints->set_layout(parallel->layout().data(), parallel->coords().tensor,
                          parallel->layout().tensor(),
                          pipeline::split_parameter_layouts(parallel->trained()));
  // BatchNorm statistics move on each rank's own batch after DDP's broadcast: a save takes rank
  // 0's (what the next step would broadcast anyway), not a mix of the ranks' values.
  checkpoints->set_before_save([this] { parallel->ddp().broadcast_buffers(); });
  make_watch();
  if (initial.generator.defined() && parallel->whole_model() != nullptr) {
    checkpoints->set_initial_values([this] { remake_initial_values(); });
  }
  if (parallel->sharded()) {
    const auto params = parallel->trained().parameters();
    std::vector<OptimizedPart> parts;
    for (const auto& piece : parallel->ddp().shard()) {
      parts.push_back({piece.name, piece.value, piece.offset, params[piece.param].sizes().vec()});
    }
    checkpoints->set_optimized(std::move(parts), parallel->zero().parameters());
  }
}

void Trainer::Impl::make_loader() {
  data::LoaderOptions o;
  o.path = config.data.path;
  COHORT_CHECK(!o.path.empty(), ConfigError, "data.path: no training dataset given");
  o.batch_size = config.data.batch_size;
  // Every stage and tensor rank of one data-parallel replica reads the same batches.
  o.rank = parallel->coords().data;
  o.world = parallel->layout().data();
  o.seed = static_cast<std::uint64_t>(config.train.seed);
  o.shuffle = config.data.shuffle;
  o.prefetch = static_cast<int>(config.data.prefetch);
  o.workers = static_cast<int>(config.data.workers);
  o.caller_reads = config.data.caller_reads;
  o.transform = config.data.transform;
  o.read_delay_ms = static_cast<int>(config.debug.data_delay_ms);
  o.reader.driver =
      config.data.driver == IoDriver::kMpio ? data::IoDriver::kMpiIo : data::IoDriver::kPosix;
  o.reader.session = &session;
  o.reader.seed = o.seed;
  o.reader.augment = {static_cast<int>(config.data.crop_padding), config.data.flip};
  o.reader.max_length = config.data.max_length;
  o.reader.target = config.data.target;
  o.bucket = config.data.bucket;
  loader = std::make_unique<data::DataLoader>(o);
  if (loader->info().vocab_size > 0) facts.tokens_per_sample = loader->info().seq_len;
  task = std::make_unique<Task>(task_options(config.train), loader->info());
  check_target_metric(config.train.target_metric, *task);
  check_target_metric(config.checkpoint.best_metric, *task, "checkpoint.best_metric");
  check_target_metric(config.train.early_stop_metric, *task, "train.early_stop_metric");
  if (!config.data.val_path.empty()) {
    auto val = data::describe(config.data.val_path);
    if (!config.data.target.empty())
      data::select_target(val, config.data.target);  // now, not at eval
    data::check_same_tokenizer(loader->info(), val);
    task->check_dataset(val);
  }
}

// Builds the whole model on every rank (same seed: same values), its tensor-parallel layers split
// over the tensor group, checks its output against the task's targets on one sample, and hands it
// to `parallel`, which keeps this rank's stage.
void Trainer::Impl::build_model(const data::DatasetInfo& info) {
  ModelInput input = model_input(info);
  const bool own = config.model.materialize == Materialize::kOwn;
  COHORT_CHECK(!own || config.model.init_from.empty(), ConfigError,
               "model.materialize = own draws each rank's part itself, and model.init_from loads "
               "the whole model: set model.materialize = whole to start from ",
               config.model.init_from);
  input.skeleton = own;
  std::optional<SkeletonScope> skeleton;
  if (own) skeleton.emplace();
  if (!own) initial.record(input);
  auto model = models::build_model(config.model, input);
  skeleton.reset();
  if (!config.model.init_from.empty() && init_from(*model)) initial.generator = at::Tensor();
  const auto held = freeze(*model);
  group_parameters(named_parameters(*model), config.optim.lr_scale, true);  // each regex matches
  // Field models take named fields, not one sample tensor: their first loss() checks instead.
  if (info.kind != data::DatasetKind::kFields) {
    check_model_output(*model, sample_input(input), own);
  }
  facts.flops_per_sample = model->train_flops_per_sample();
  facts.parameters = parameter_count(*model);
  for (const auto& p : model->parameters()) facts.frozen += p.requires_grad() ? 0 : p.numel();
  attach_model(std::move(model), input, own);
  parallel->hold_in_eval(held);              // of those, this rank's; the rest go with the model
  startup_peak_rss = env::peak_rss_bytes();  // the model built and this rank's part kept
  const auto params = parallel->trained().parameters();
  settings.cuda = !params.empty() && params.front().is_cuda();
}

// What the dataset says the model takes and gives; a field dataset's model runs whole.
ModelInput Trainer::Impl::model_input(const data::DatasetInfo& info) const {
  ModelInput input{info.sample_shape, task->outputs(), info.vocab_size, info.seq_len,
                   parallel->tensor_group()};
  for (const auto& field : info.fields) {
    if (!field.target) input.fields.push_back(field);
  }
  COHORT_CHECK(info.kind != data::DatasetKind::kFields ||
                   (!parallel->pipelined() && config.parallel.devices.empty() &&
                    !parallel->zero().parameters()),
               ConfigError, info.path,
               ": a field dataset's model runs whole on one device (parallel.pipeline_stages, "
               "parallel.devices and parallel.zero = 3 need a single-input dataset)");
  return input;
}

// model.freeze: the parameters it names stop training; with model.freeze_statistics, the modules
// whose running statistics stay as they are (returned, to be held in eval mode).
std::vector<std::shared_ptr<torch::nn::Module>> Trainer::Impl::freeze(Model& model) {
  std::vector<std::shared_ptr<torch::nn::Module>> held;
  if (config.model.freeze.empty()) return held;
  freeze_parameters(model, config.model.freeze);
  if (config.model.freeze_statistics) held = frozen_statistics_modules(model);
  facts.held_statistics = static_cast<std::int64_t>(held.size());
  return held;
}

// This rank's share of the model into Parallelism, under DDP; model.materialize = own: its values
// drawn there, per module, from train.seed.
void Trainer::Impl::attach_model(std::shared_ptr<Model> model, const ModelInput& input, bool own) {
  ddp::DdpOptions d;
  d.bucket_bytes = static_cast<std::size_t>(config.parallel.bucket_mb * 1048576);
  d.overlap = config.parallel.overlap;
  std::optional<Materializer> materializer;
  if (own) {
    materializer.emplace(static_cast<std::uint64_t>(config.train.seed),
                         [model](const std::string& module, const std::string& tensor,
                                 at::Tensor& value, at::Generator& generator) {
                           model->adjust_initial_value(module, tensor, value, generator);
                         });
  }
  parallel->attach(std::move(model), sample_input(input), d,
                   recompute_segment(config.model.recompute),
                   materializer ? &*materializer : nullptr);
}

// model.init_from, unless the run resumes (its checkpoint holds the weights; the pretrained file
// need not be there any more when a requeued job comes back).
// Returns whether it read the file.
bool Trainer::Impl::init_from(Model& model) {
  const std::string dir = config.checkpoint_dir();
  std::error_code error;
  if (config.checkpoint.resume && std::filesystem::is_directory(dir, error) &&
      !ckpt::list_checkpoints(dir).empty()) {
    initial.init_line =
        "init_from " + config.model.init_from + ": not read, the run resumes from " + dir;
    initial.init_from_skipped = true;
    return false;
  }
  initial.init_line = init_weights(model, config.model).text();
  return true;
}

// The model's output for one sample against the task's targets, before any step (eval mode: no
// BatchNorm statistics move, no dropout draws from the generator). Every rank runs it (tensor-
// parallel layers reduce over their group). A skeleton (model.materialize = own) with blocks is
// run block by block, its pages given back after each: read whole, it would cost the whole model
// on a kernel that backs reads of untouched pages (materialize.hpp).
void Trainer::Impl::check_model_output(Model& model, const at::Tensor& sample, bool skeleton) {
  const auto blocks = skeleton ? model.blocks() : std::vector<pipeline::BlockSpec>();
  if (!blocks.empty()) {
    const auto shapes =
        pipeline::block_output_shapes(blocks, model, sample, release_skeleton_pages);
    task->check_output(shapes.back());
    return;
  }
  torch::NoGradGuard no_grad;
  model.eval();
  const at::Tensor output = model.forward(sample);
  model.train();
  const auto shape = output.sizes().vec();
  task->check_output({shape.begin() + 1, shape.end()});
}

// Steps, epochs and batches of the run; the accumulation depends on the dataset's size.
void Trainer::Impl::plan_run() {
  plan.accumulation = config.optim.accumulation;
  plan.batch_size = config.data.batch_size;
  plan.replicas = parallel->layout().data();
  COHORT_CHECK(plan.accumulation <= loader->batches_per_epoch(), ConfigError,
               "optim.accumulation must be 1..", loader->batches_per_epoch(),
               " (batches per epoch)");
  plan.total_steps = loader->batches_per_epoch() / plan.accumulation * config.train.epochs;
  const std::int64_t max_steps = config.train.max_steps;
  plan.limited_by_steps = max_steps > 0 && max_steps < plan.total_steps;
  if (plan.limited_by_steps) plan.total_steps = max_steps;
}

// A signal every rank agreed on: a synchronous checkpoint, then requeue (or not), said in one line.
void Trainer::Impl::stop_for_signal(int signal, std::int64_t step) {
  log({{"event", "signal"}, {"signal", ops::signal_name_or_deadline(signal)}, {"step", step}});
  checkpoints->save_now(step, loader->state(), plan.batch_size);
  const ops::ComeBack back = preemption->come_back(signal, step);
  log({{"event", back.requeued ? "requeue" : "stop"}, {"step", step}, {"message", back.line}});
  say(back.line);
}

// The step's sample (its phases timed along the way) to the monitor: metrics.jsonl, the console,
// and every monitor.summary_every steps the cross-rank summary (collective).
void Trainer::Impl::report_step(std::int64_t step, std::int64_t epoch) {
  monitor::StepSample sample;
  sample.step = step;
  sample.epoch = epoch;
  sample.loss = summary.last_loss;
  sample.lr = optimization.schedule->at(step - 1);
  sample.grad_norm = optimization.last_grad_norm;
  sample.samples = plan.samples_per_step();
  sample.tokens = sample.samples * facts.tokens_per_sample;
  timer.end(sample);
  monitor->step(sample);
}

// Opens the monitor once it is known whether the run continues a previous one (metrics.jsonl is
// appended to then). Collective.
void Trainer::Impl::start_monitor(std::optional<std::int64_t> resumed_at) {
  auto o = monitor_options(config);
  o.append = resumed_at.has_value();
  o.resume_step = resumed_at.value_or(0);
  o.total_steps = plan.total_steps;
  const auto params = parallel->trained().parameters();
  o.cuda_device = settings.cuda ? params.front().device().index() : -1;
  o.cost.flops_per_sample = facts.flops_per_sample;
  o.run_info = {{"config_hash", summary.config_hash},
                {"launcher", summary.launcher},
                {"model", config.model.name},
                {"parameters", facts.parameters},
                {"layout",
                 {{"data", parallel->layout().data()},
                  {"pipeline_stages", parallel->layout().stages()},
                  {"tensor", parallel->layout().tensor()}}},
                {"backend", to_string(config.parallel.backend)},
                {"flops_per_sample", o.cost.flops_per_sample}};
  // The gradient all-reduces it reports are the data-parallel group's (the world without
  // pipeline or tensor parallelism).
  monitor = std::make_unique<monitor::Monitor>(o, *comms.control, parallel->data_group(),
                                               session.node_rank(), progress);
  checkpoints->set_on_committed(
      [this](std::int64_t step, const std::string& path, double seconds, bool async) {
        log({{"event", "checkpoint_saved"},
             {"step", step},
             {"path", path},
             {"seconds", seconds},
             {"async", async}});
      });
}

// Loads the newest valid checkpoint when there is one and puts the loader where it was; opens
// metrics.jsonl (appending when resuming, so the run's record continues).
std::optional<ResumePoint> Trainer::Impl::resume() {
  comms.control->barrier();  // the load's time, not the wait for a rank still starting
  const auto load_start = Clock::now();
  auto point = checkpoints->resume(plan.batch_size, progress);
  started.checkpoint_load_s = std::chrono::duration<double>(Clock::now() - load_start).count();
  started.resumed = Clock::now();
  start_monitor(point ? std::optional<std::int64_t>(point->step) : std::nullopt);
  if (!point) {
    if (initial.init_from_skipped) init_from_after_all();
    return std::nullopt;
  }
  // ZeRO 3 loaded the parameters into the shard pieces: the kept-whole ones gathered from them.
  if (parallel->zero().parameters()) parallel->ddp().gather_parameters();
  loader->restore(point->loader);
  say("resumed from " + point->path + " at step " + std::to_string(point->step) + " (epoch " +
      std::to_string(point->loader.epoch) + ", batch " + std::to_string(point->loader.batch) + ")");
  log({{"event", "resume"}, {"step", point->step}, {"from", point->path}});
  return point;
}

Trainer::Trainer(const Config& config, const comm::MpiSession& session, std::string launcher)
    : impl_(std::make_unique<Impl>(config, session)) {
  impl_->summary.launcher = std::move(launcher);
  impl_->setup();
  if (session.rank() == 0) {
    const std::string& dir = config.train.run_dir;
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    COHORT_CHECK(!error, ConfigError, "train.run_dir: cannot create ", dir, ": ", error.message());
    io::write_file_atomically(dir + "/config.resolved.ini", config.resolved_ini());
  }
}

Trainer::~Trainer() = default;

TrainSummary Trainer::run(std::FILE* progress) {
  impl_->progress = progress;
  return impl_->run();
}

std::string stop_reason_text(const TrainSummary& s) {
  switch (s.stop_reason) {
    case StopReason::kMaxSteps:
      return "max_steps";
    case StopReason::kTargetReached:
      return "target reached";
    case StopReason::kEarlyStop:
      return "early stop";
    case StopReason::kSignal:
      return signal_name(s.stop_signal);
    case StopReason::kTimeLimit:
      return "time limit";
    case StopReason::kEpochs:
      break;
  }
  return "epochs";
}

}  // namespace cohort::train
