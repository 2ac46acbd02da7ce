// The training loop of Trainer::Impl, top to bottom: resume, then per epoch the batches, grouped
// into optimizer steps; after each step a checkpoint when due, the agreed signal, the monitor's
// report, evaluation when due, and the decision to stop; at the end the final evaluation, the last
// checkpoint and the run's record.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include "cohort/data/loader.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/error.hpp"
#include "cohort/monitor/monitor.hpp"
#include "cohort/ops/restart_record.hpp"
#include "settings/model_catalog.hpp"
#include "train/step.hpp"
#include "train/trainer_impl.hpp"

namespace cohort::train {

void Trainer::Impl::print_banner() const {
  if (session.rank() == 0 && !initial.init_line.empty())
    std::fprintf(progress, "%s\n", initial.init_line.c_str());
  if (session.rank() != 0 || config.train.log_every <= 0) return;
  const auto& s = summary;
  std::fprintf(progress,
               "train: %d rank(s) (%s), %d torch + %d OpenBLAS thread(s) per rank, malloc "
               "tuning %s, %lld steps\n",
               s.ranks, s.launcher.c_str(), s.threads, s.blas_threads, s.malloc_tuning.c_str(),
               static_cast<long long>(plan.total_steps));
  const std::string library = catalog::library_of(config.model.name);
  std::string trainable = ", all trainable";
  if (facts.frozen > 0) {
    trainable = ": " + std::to_string(facts.parameters - facts.frozen) + " trainable, " +
                std::to_string(facts.frozen) + " frozen (model.freeze; running statistics of " +
                std::to_string(facts.held_statistics) + " frozen module(s) kept)";
  }
  std::fprintf(progress, "model %s%s: %lld parameters%s\n", config.model.name.c_str(),
               library.empty() ? "" : (" (" + library + ")").c_str(),
               static_cast<long long>(facts.parameters), trainable.c_str());
  const auto& layout = parallel->layout();
  if (layout.stages() > 1 || layout.tensor() > 1) {
    std::fprintf(progress,
                 "parallel: data %d x pipeline %d x tensor %d (%s schedule, %lld "
                 "micro-batches; cohort env --parallel shows the ranks)\n",
                 layout.data(), layout.stages(), layout.tensor(),
                 to_string(config.parallel.schedule).c_str(),
                 static_cast<long long>(config.parallel.micro_batches));
  }
  if (parallel->sharded()) {
    std::fprintf(progress,
                 "zero %lld over %d data-parallel rank(s): this rank steps %lld of the %lld "
                 "trained parameters of its part of the model (optimizer state%s held for those "
                 "only)\n",
                 static_cast<long long>(parallel->zero().stage), layout.data(),
                 static_cast<long long>(facts.trained_here),
                 static_cast<long long>(facts.trained_stage), parallel->zero().held_too());
  }
}

TrainSummary Trainer::Impl::run() {
  const auto start = LoopState::Clock::now();
  print_banner();
  const auto resumed = resume();
  LoopState loop;
  loop.first_step = loop.step = resumed ? resumed->step : 0;
  if (loop.step >= plan.total_steps) {  // a finished run started again
    loop.stop = plan.limited_by_steps ? StopReason::kMaxSteps : StopReason::kEpochs;
    say("the run is complete at step " + std::to_string(loop.step) +
        ": nothing to train (to train longer, raise train.max_steps or train.epochs; to start "
        "over, a new train.run_dir or checkpoint.resume = false)");
  }
  if (resumed) {
    // The checkpoint knows whether its step was evaluated (the final evaluation is not repeated).
    if (watch->evaluated_at() == loop.step) loop.evaluated_at = loop.step;
    evaluate_again_after_resume(loop);
  }
  timer.begin();
  for (std::int64_t epoch = resumed ? resumed->loader.epoch : 0;
       epoch < config.train.epochs && !loop.stop; ++epoch) {
    summary.epochs = epoch + 1;
    run_epoch(loop, epoch);
    if (!loop.stop && config.train.eval_every == 0) stop_on_signal(loop, evaluate_now(loop));
  }
  // The final model (a signal that abandons this evaluation has nothing left to stop).
  if (loop.evaluated_at != loop.step && !summary.resumable) evaluate_now(loop);
  checkpoints->maybe_save(loop.step, loader->state(), plan.batch_size, /*final=*/true);
  checkpoints->finish();  // the last save is on disk before the run reports its end
  if (parallel->pipelined()) {
    auto record = parallel->pipeline_report(*comms.control);
    if (!record.empty()) log(std::move(record));
  }
  if (parallel->sharded() && session.rank() == 0 && config.train.log_every > 0) {
    // What the stage saved, as DDP holds it after the last step (stage 1: whole buckets; 2 and
    // 3: this rank's shards): tests/mpi/zero_check.py compares it with the rank's share.
    std::fprintf(progress, "zero %d: this rank held %lld bytes of gradients between steps\n",
                 parallel->zero().stage,
                 static_cast<long long>(parallel->ddp().memory().gradient_bytes));
  }
  monitor->finish();
  return finish(loop, start);
}

// The epoch's batches, `plan.accumulation` to an optimizer step, each step followed by what
// comes between steps; returns early when the loop is to stop.
void Trainer::Impl::run_epoch(LoopState& loop, std::int64_t epoch) {
  std::vector<data::Batch> micro;
  while (auto batch = loader->next()) {
    timer.lap(monitor::Phase::kData);
    micro.push_back(std::move(*batch));
    if (static_cast<std::int64_t>(micro.size()) < plan.accumulation) continue;
    COHORT_CHECK(loop.step + 1 != settings.device_fault_step, DeviceError,
                 "injected device fault at step ", settings.device_fault_step,
                 " (debug.device_fault_step), as a CUDA error fails");
    summary.last_loss = step(micro, loop.step);
    micro.clear();
    ++loop.step;
    loop.steady.step_done(loop.step - loop.first_step);
    checkpoints->maybe_save(loop.step, loader->state(), plan.batch_size, false);
    timer.lap(monitor::Phase::kCheckpoint);
    int signal = preemption->agreed_signal();
    timer.lap(monitor::Phase::kComm);
    report_step(loop.step, epoch);
    if (loop.step == loop.first_step + 1) report_startup(loop.first_step);
    timer.begin();
    if (const auto every = config.train.eval_every; every > 0 && loop.step % every == 0) {
      const int during = evaluate_now(loop);
      if (signal == 0) signal = during;
    }
    stop_on_signal(loop, signal);
    if (loop.step >= plan.total_steps && !loop.stop) {
      loop.stop = plan.limited_by_steps ? StopReason::kMaxSteps : StopReason::kEpochs;
    }
    if (loop.stop) return;
  }
  // A partial accumulation group at the epoch's end is dropped (`micro`), on every rank alike.
}

// Evaluation between steps: not part of any step's time, nor of the steady throughput. Returns
// the signal that abandoned it (0: it ran to its end).
int Trainer::Impl::evaluate_now(LoopState& loop) {
  loop.evaluated_at = loop.step;
  const auto eval_start = LoopState::Clock::now();
  int signal = 0;
  if (const auto reason = evaluate_and_check(loop.step, signal); reason && !loop.stop) {
    loop.stop = reason;
  }
  loop.steady.exclude(LoopState::Clock::now() - eval_start);
  timer.begin();
  return signal;
}

// Evaluates when a validation set is given; a reason to stop when the target metric is reached
// or early stopping says so.
std::optional<StopReason> Trainer::Impl::evaluate_and_check(std::int64_t step_index,
                                                            int& stopped_by) {
  const std::string& val = config.data.val_path;
  if (val.empty()) return std::nullopt;
  EvalOptions o;
  o.task = task.get();
  o.batch_size = plan.batch_size;
  o.max_length = config.data.max_length;
  o.transform = config.data.transform;
  o.target = config.data.target;
  o.read_delay_ms = config.debug.data_delay_ms;
  o.poll = [this] { return preemption->agreed_signal(); };
  o.stopped_by = &stopped_by;
  auto result = evaluate(*parallel, val, o, *comms.control);
  if (!result) {  // a signal: acted on now, not after the whole evaluation
    say("eval  step " + std::to_string(step_index) + ": abandoned for " +
        ops::signal_name_or_deadline(stopped_by));
    log({{"event", "eval_abandoned"},
         {"step", step_index},
         {"signal", ops::signal_name_or_deadline(stopped_by)}});
    return std::nullopt;
  }
  summary.eval = *result;
  summary.evaluated = true;
  const auto& e = summary.eval;
  say("eval  step " + std::to_string(step_index) + ": " + eval_text(e) + " (" +
      std::to_string(e.samples) + (e.per_token ? " tokens)" : " samples)"));
  nlohmann::json record = {
      {"event", "eval"},        {"step", step_index},         {"loss", e.loss},
      {"accuracy", e.accuracy}, {"perplexity", e.perplexity}, {"samples", e.samples},
      {"task", e.task}};
  for (const auto& [name, value] : e.metrics) record[name] = value;
  log(std::move(record));
  const bool early_stop = watch_evaluation(step_index, e);
  const TargetMetric target = config.train.target_metric;
  const double value = metric_value(e, target);
  if (target != TargetMetric::kNone && !std::isnan(value) &&
      (higher_is_better(target) ? value >= config.train.target_value
                                : value <= config.train.target_value)) {
    return StopReason::kTargetReached;
  }
  if (early_stop) return StopReason::kEarlyStop;
  return std::nullopt;
}

// A signal (or the time limit) agreed at this step: checkpoint, requeue, stop resumable.
void Trainer::Impl::stop_on_signal(LoopState& loop, int signal) {
  if (signal == 0) return;
  stop_for_signal(signal, loop.step);
  loop.stop = signal == ops::Preemption::kWallTime ? StopReason::kTimeLimit : StopReason::kSignal;
  summary.stop_signal = signal == ops::Preemption::kWallTime ? 0 : signal;
  summary.resumable = true;
}

// After this start's first step: how long it took to get there, in parts (rank 0's clock; the
// first step's all-reduce waited for the slowest rank).
void Trainer::Impl::report_startup(std::int64_t first_step) {
  const auto since = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  const auto now = Clock::now();
  // The restart `cohort supervise` decided before this run (ops/restart_record.hpp), completed
  // with what only this run knows; rank 0 alone, the writer of the run's records.
  if (session.rank() == 0) {
    const auto job = env::Environment::from_process().get("SLURM_JOB_ID");
    if (const auto restart = ops::complete_restart(config.train.run_dir, job.value_or(""),
                                                   first_step, started.checkpoint_load_s,
                                                   since(started.resumed, now), ops::unix_ms())) {
      log(restart->record);
      say(restart->line);
    }
  }
  log({{"event", "startup"},
       {"resumed", first_step > 0},
       {"to_trainer_s", started.to_trainer_s},
       {"setup_s", since(started.trainer, started.setup_done)},
       {"checkpoint_load_s", started.checkpoint_load_s},
       {"first_step_s", since(started.resumed, now)},
       {"total_s", started.to_trainer_s + since(started.trainer, now)}});
}

// The summary and the run's "end" record (collective: every rank's peak resident memory).
TrainSummary Trainer::Impl::finish(const LoopState& loop, LoopState::Clock::time_point start) {
  auto& s = summary;
  s.stop_reason = loop.stop.value_or(StopReason::kEpochs);
  s.monitor_seconds = monitor->own_seconds() + optimization.grad_norm_seconds;
  s.steps = loop.step;
  s.seconds = std::chrono::duration<double>(LoopState::Clock::now() - start).count();
  const std::int64_t samples = (loop.step - loop.first_step) * plan.samples_per_step();
  s.samples_per_s = static_cast<double>(samples) / s.seconds;  // this start, end to end
  s.steady_samples_per_s = loop.steady.samples_per_s(plan.samples_per_step());
  const auto peaks = peak_rss_of_ranks();  // the run's whole peak: optimizer state included
  log({{"event", "end"},
       {"peak_rss_bytes", peaks},
       {"steps", s.steps},
       {"seconds", s.seconds},
       {"samples", samples},
       {"samples_per_s", s.samples_per_s},
       {"steady_samples_per_s", s.steady_samples_per_s},
       {"monitor_s", s.monitor_seconds},
       {"stop_reason", stop_reason_text(s)}});
  return s;
}

}  // namespace cohort::train
