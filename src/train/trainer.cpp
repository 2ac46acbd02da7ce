#include "cohort/train/trainer.hpp"

#include <ATen/Parallel.h>
#include <ATen/ops/tensor.h>
#include <torch/optim/optimizer.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <utility>

#include "cohort/comm/allocator.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/data/checksum.hpp"
#include "cohort/data/loader.hpp"
#include "cohort/ddp/distributed_data_parallel.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/error.hpp"
#include "cohort/monitor/monitor.hpp"
#include "cohort/pipeline/tensor_parallel.hpp"
#include "cohort/train/config.hpp"
#include "cohort/train/monitoring.hpp"
#include "cohort/train/optim.hpp"
#include "train/checkpointing.hpp"
#include "train/parallelism.hpp"
#include "train/preemption.hpp"
#include "train/steady_clock.hpp"
#include "train/step.hpp"
#include "train/trainer_impl.hpp"

namespace cohort::train {

int threads_per_rank(std::int64_t configured, int local_ranks) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // More threads than the node has cores only spin against each other (a run with 4096 stalled).
  COHORT_CHECK(configured <= cores, ConfigError, "train.threads = ", configured,
               " is more than the ", cores, " cores of this node");
  if (configured > 0) return static_cast<int>(configured);
  if (const char* cpus = std::getenv("SLURM_CPUS_PER_TASK")) {
    const int n = std::atoi(cpus);
    if (n > 0) return std::min(n, cores);
  }
  return std::max(1, cores / std::max(1, local_ranks));
}

void Trainer::Impl::setup() {
  summary.ranks = session.size();
  summary.threads = threads_per_rank(config.get_int("train.threads"), session.node_size());
  at::set_num_threads(summary.threads);
  // One by default: OpenBLAS's own pool spinning next to torch's OpenMP threads oversubscribed
  // the cores (the benchmark MLP ran 2.2x slower with 2 + 2 threads on 2 cores than with 2 + 1);
  // docs/performance.md has the matrix.
  const std::int64_t blas = config.get_int("train.blas_threads");
  summary.blas_threads = env::set_blas_threads(blas > 0 ? static_cast<int>(blas) : summary.threads);
  summary.malloc_tuning = comm::tune_allocator(config.get_bool("train.malloc_tuning")).reason;
  summary.config_hash = config.hash();
  bf16 = config.get_string("train.precision") == "bf16";
  torch::manual_seed(static_cast<std::uint64_t>(config.get_int("train.seed")));
  comm::CommOptions comm_options;
  comm_options.timeout = std::chrono::seconds(config.get_int("parallel.timeout_s"));
  COHORT_CHECK(comm_options.timeout.count() > 0, ConfigError,
               "parallel.timeout_s must be positive");
  comm = comm::make_communicator(
      session,
      config.get_string("parallel.backend") == "nccl" ? comm::Backend::kNccl : comm::Backend::kMpi,
      comm_options);
  control = comm::make_communicator(session, comm::Backend::kMpi, comm_options);
  parallel = std::make_unique<Parallelism>(config, *comm, session.node_size());
  parallel->check_tensor_groups(*control);
  data::LoaderOptions o;
  o.path = config.get_string("data.path");
  COHORT_CHECK(!o.path.empty(), ConfigError, "data.path: no training dataset given");
  o.batch_size = config.get_int("data.batch_size");
  // Every stage and tensor rank of one data-parallel replica reads the same batches.
  o.rank = parallel->coords().data;
  o.world = parallel->layout().data();
  o.seed = static_cast<std::uint64_t>(config.get_int("train.seed"));
  o.shuffle = config.get_bool("data.shuffle");
  o.prefetch = static_cast<int>(config.get_int("data.prefetch"));
  o.read_delay_ms = static_cast<int>(config.get_int("debug.data_delay_ms"));
  o.reader.driver = data::parse_io_driver(config.get_string("data.driver"));
  o.reader.session = &session;
  o.reader.seed = o.seed;
  o.reader.augment = {static_cast<int>(config.get_int("data.crop_padding")),
                      config.get_bool("data.flip")};
  loader = std::make_unique<data::DataLoader>(o);
  const auto& info = loader->info();
  if (info.vocab_size > 0) tokens_per_sample = info.seq_len;
  build_model(info);
  optimizer = make_optimizer(config, parallel->trained().parameters());
  accumulation = config.get_int("optim.accumulation");
  clip_norm = config.get_float("optim.clip_norm");
  grad_norm_every = config.get_int("monitor.grad_norm_every");
  COHORT_CHECK(accumulation >= 1 && accumulation <= loader->batches_per_epoch(), ConfigError,
               "optim.accumulation must be 1..", loader->batches_per_epoch(),
               " (batches per epoch)");
  total_steps = loader->batches_per_epoch() / accumulation * config.get_int("train.epochs");
  const std::int64_t max_steps = config.get_int("train.max_steps");
  limited_by_steps = max_steps > 0 && max_steps < total_steps;
  if (limited_by_steps) total_steps = max_steps;
  schedule = std::make_unique<LrSchedule>(config, total_steps);
  checkpoints =
      std::make_unique<TrainCheckpoints>(config, session, parallel->trained(), *optimizer);
  const auto split = pipeline::split_parameter_names(parallel->trained());
  checkpoints->set_layout(parallel->layout().data(), parallel->coords().tensor,
                          parallel->layout().tensor(), {split.begin(), split.end()});
  preemption = std::make_unique<Preemption>(config, *control);
}

// Builds the whole model on every rank (same seed: same values), its tensor-parallel layers split
// over the tensor group, and hands it to `parallel`, which keeps this rank's stage.
void Trainer::Impl::build_model(const data::DatasetInfo& info) {
  const ModelInput input{info.sample_shape, info.classes, info.vocab_size, info.seq_len,
                         parallel->tensor_group()};
  auto model = train::build_model(config, input);
  flops_per_sample = model->train_flops_per_sample();
  parameters = parameter_count(*model);
  ddp::DdpOptions d;
  d.bucket_bytes = static_cast<std::size_t>(config.get_float("parallel.bucket_mb") * 1048576);
  d.overlap = config.get_bool("parallel.overlap");
  parallel->attach(std::move(model), sample_input(input), d);
  const auto params = parallel->trained().parameters();
  cuda = !params.empty() && params.front().is_cuda();
}

// A signal every rank agreed on: a synchronous checkpoint, then requeue (or not), said in one line.
void Trainer::Impl::stop_for_signal(int signal, std::int64_t step) {
  log({{"event", "signal"}, {"signal", signal_name(signal)}, {"step", step}});
  checkpoints->save_now(step, loader->state(), config.get_int("data.batch_size"));
  const std::string line = preemption->come_back(signal, step);
  const bool requeued = line.find("requeued") != std::string::npos;
  log({{"event", requeued ? "requeue" : "stop"}, {"step", step}, {"message", line}});
  say(line);
}

// The step's sample (its phases timed along the way) to the monitor: metrics.jsonl, the console,
// and every monitor.summary_every steps the cross-rank summary (collective).
void Trainer::Impl::report_step(std::int64_t step, std::int64_t epoch) {
  monitor::StepSample sample;
  sample.step = step;
  sample.epoch = epoch;
  sample.loss = summary.last_loss;
  sample.lr = schedule->at(step - 1);
  sample.grad_norm = last_grad_norm;
  sample.samples = accumulation * config.get_int("data.batch_size") * parallel->layout().data();
  sample.tokens = sample.samples * tokens_per_sample;
  timer.end(sample);
  monitor->step(sample);
}

// Opens the monitor once it is known whether the run continues a previous one (metrics.jsonl is
// appended to then). Collective.
void Trainer::Impl::start_monitor(bool append) {
  auto o = monitor_options(config);
  o.append = append;
  o.total_steps = total_steps;
  const auto params = parallel->trained().parameters();
  o.cuda_device = cuda ? params.front().device().index() : -1;
  o.cost.flops_per_sample = flops_per_sample;
  o.run_info = {{"config_hash", summary.config_hash},
                {"launcher", summary.launcher},
                {"model", config.get_string("model.name")},
                {"parameters", parameters},
                {"layout",
                 {{"data", parallel->layout().data()},
                  {"pipeline_stages", parallel->layout().stages()},
                  {"tensor", parallel->layout().tensor()}}},
                {"backend", config.get_string("parallel.backend")},
                {"flops_per_sample", o.cost.flops_per_sample}};
  // The gradient all-reduces it reports are the data-parallel group's (the world without
  // pipeline or tensor parallelism).
  monitor = std::make_unique<monitor::Monitor>(o, *control, parallel->data_group(),
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
  auto point = checkpoints->resume(config.get_int("data.batch_size"), progress);
  start_monitor(point.has_value());
  if (!point) return std::nullopt;
  loader->restore(point->loader);
  say("resumed from " + point->path + " at step " + std::to_string(point->step) + " (epoch " +
      std::to_string(point->loader.epoch) + ", batch " + std::to_string(point->loader.batch) + ")");
  log({{"event", "resume"}, {"step", point->step}, {"from", point->path}});
  return point;
}

// Evaluates when a validation set is given; true when the target metric is reached.
bool Trainer::Impl::evaluate_and_check(std::int64_t step_index) {
  const std::string& val = config.get_string("data.val_path");
  if (val.empty()) return false;
  summary.eval = evaluate(*parallel, val, config.get_int("data.batch_size"), *control);
  summary.evaluated = true;
  const auto& e = summary.eval;
  char line[160];
  std::snprintf(line, sizeof line,
                "eval  step %lld: loss %.4f accuracy %.4f perplexity %.3f (%lld %s)",
                static_cast<long long>(step_index), e.loss, e.accuracy, e.perplexity,
                static_cast<long long>(e.samples), e.per_token ? "tokens" : "samples");
  say(line);
  log({{"event", "eval"},
       {"step", step_index},
       {"loss", e.loss},
       {"accuracy", e.accuracy},
       {"perplexity", e.perplexity},
       {"samples", e.samples}});
  const std::string& metric = config.get_string("train.target_metric");
  const double target = config.get_float("train.target_value");
  if (metric == "accuracy") return e.accuracy >= target;
  if (metric == "loss") return e.loss <= target;
  if (metric == "perplexity") return e.perplexity <= target;
  return false;
}

Trainer::Trainer(const Config& config, const comm::MpiSession& session, std::string launcher)
    : impl_(std::make_unique<Impl>(config, session)) {
  impl_->summary.launcher = std::move(launcher);
  impl_->setup();
  impl_->slow =
      config.get_int("debug.slow_rank") == session.rank() && config.get_int("debug.slow_ms") > 0;
  if (session.rank() == 0) {
    const std::string dir = config.get_string("train.run_dir");
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    COHORT_CHECK(!error, ConfigError, "train.run_dir: cannot create ", dir, ": ", error.message());
    std::ofstream(dir + "/config.resolved.ini") << config.resolved_ini();
  }
}

Trainer::~Trainer() = default;

TrainSummary Trainer::run(std::FILE* progress) {
  impl_->progress = progress;
  auto& im = *impl_;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const std::int64_t epochs = im.config.get_int("train.epochs");
  const std::int64_t eval_every = im.config.get_int("train.eval_every");
  const std::int64_t log_every = im.config.get_int("train.log_every");
  const std::int64_t batch_size = im.config.get_int("data.batch_size");
  auto& s = im.summary;
  s.stop_reason = "epochs";
  if (im.session.rank() == 0 && log_every > 0) {
    std::fprintf(progress,
                 "train: %d rank(s) (%s), %d torch + %d OpenBLAS thread(s) per rank, malloc "
                 "tuning %s, %lld steps\n",
                 s.ranks, s.launcher.c_str(), s.threads, s.blas_threads, s.malloc_tuning.c_str(),
                 static_cast<long long>(im.total_steps));
    const auto& layout = im.parallel->layout();
    if (layout.stages() > 1 || layout.tensor() > 1) {
      std::fprintf(progress,
                   "parallel: data %d x pipeline %d x tensor %d (%s schedule, %lld "
                   "micro-batches; cohort env --parallel shows the ranks)\n",
                   layout.data(), layout.stages(), layout.tensor(),
                   im.config.get_string("parallel.schedule").c_str(),
                   static_cast<long long>(im.config.get_int("parallel.micro_batches")));
    }
  }
  const auto resumed = im.resume();
  const std::int64_t first_step = resumed ? resumed->step : 0;
  std::int64_t step = first_step, evaluated_at = -1;
  std::vector<data::Batch> micro;
  bool stop = step >= im.total_steps;  // a finished run started again: nothing left to do
  SteadyClock steady;
  const auto finish_eval = [&] {
    evaluated_at = step;
    const auto eval_start = Clock::now();
    if (im.evaluate_and_check(step)) {
      stop = true;
      s.stop_reason = "target reached";
    }
    steady.exclude(Clock::now() - eval_start);
    im.timer.begin();  // evaluation is not part of the next step
  };
  im.timer.begin();
  for (std::int64_t epoch = resumed ? resumed->loader.epoch : 0; epoch < epochs && !stop; ++epoch) {
    s.epochs = epoch + 1;
    while (auto batch = im.loader->next()) {
      im.timer.lap(monitor::Phase::kData);
      micro.push_back(std::move(*batch));
      if (static_cast<std::int64_t>(micro.size()) < im.accumulation) continue;
      s.last_loss = im.step(micro, step);
      micro.clear();
      ++step;
      steady.step_done(step - first_step);
      im.checkpoints->maybe_save(step, im.loader->state(), batch_size, false);
      im.timer.lap(monitor::Phase::kCheckpoint);
      const int signal = im.preemption->agreed_signal();
      im.timer.lap(monitor::Phase::kComm);
      im.report_step(step, epoch);
      im.timer.begin();
      if (eval_every > 0 && step % eval_every == 0) finish_eval();
      if (signal != 0) {
        im.stop_for_signal(signal, step);
        s.stop_reason = signal_name(signal);
        s.resumable = stop = true;
      }
      if (step >= im.total_steps) {
        stop = true;
        if (s.stop_reason == "epochs" && im.limited_by_steps) s.stop_reason = "max_steps";
      }
      if (stop) break;
    }
    micro.clear();  // a partial accumulation group at the epoch's end is dropped on every rank
    if (!stop && eval_every == 0) finish_eval();
  }
  if (evaluated_at != step && !s.resumable) finish_eval();  // the final model is evaluated
  im.checkpoints->maybe_save(step, im.loader->state(), batch_size, /*final=*/true);
  im.checkpoints->finish();  // the last save is on disk before the run reports its end
  if (im.parallel->pipelined()) {
    auto record = im.parallel->pipeline_report(*im.control);
    if (!record.empty()) im.log(std::move(record));
  }
  im.monitor->finish();
  s.monitor_seconds = im.monitor->own_seconds() + im.grad_norm_seconds;
  s.steps = step;
  s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const int replicas = im.parallel->layout().data();
  const std::int64_t samples = (step - first_step) * im.accumulation * batch_size * replicas;
  s.samples_per_s = static_cast<double>(samples) / s.seconds;  // this start, end to end
  s.steady_samples_per_s = steady.samples_per_s(im.accumulation * batch_size * replicas);
  im.log({{"event", "end"},
          {"steps", s.steps},
          {"seconds", s.seconds},
          {"samples", samples},
          {"samples_per_s", s.samples_per_s},
          {"steady_samples_per_s", s.steady_samples_per_s},
          {"monitor_s", s.monitor_seconds},
          {"stop_reason", s.stop_reason}});
  return s;
}

}  // namespace cohort::train
