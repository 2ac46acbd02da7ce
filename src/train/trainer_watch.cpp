// Best checkpoints and early stopping (cohort/train/metric_watch.hpp decides; this saves, says
// and logs what it decided), and the evaluation a resumed run repeats so that it decides as the
// uninterrupted run did.
#include <cmath>
#include <string>
#include <vector>

#include "train/trainer_impl.hpp"

namespace cohort::train {
namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

}  // namespace

void Trainer::Impl::make_watch() {
  WatchOptions o;
  o.best_metric = config.checkpoint.best_metric;
  o.best_keep = config.checkpoint.best_keep;
  o.stop_metric = config.train.early_stop_metric != TargetMetric::kNone
                      ? config.train.early_stop_metric
                      : config.checkpoint.best_metric;
  o.patience = config.train.early_stop_patience;
  o.min_delta = config.train.early_stop_min_delta;
  if (o.patience == 0) o.stop_metric = TargetMetric::kNone;
  watch = std::make_unique<MetricWatch>(o);
  checkpoints->set_watch(watch.get());
}

// After the evaluation at `step` (every rank has the same result): the best checkpoints kept and
// saved, the early-stopping count moved on. True when the run is to stop.
bool Trainer::Impl::watch_evaluation(std::int64_t step, const EvalResult& result) {
  if (!watch->active()) {
    watch->observe(step, NAN, NAN);  // the step evaluated, for a rerun of a finished run
    return false;
  }
  const TargetMetric best_metric = watch->options().best_metric;
  const TargetMetric stop_metric = watch->options().stop_metric;
  const WatchVerdict verdict =
      watch->observe(step, metric_value(result, best_metric), metric_value(result, stop_metric));
  if (verdict.keep) {
    std::vector<std::int64_t> kept;
    nlohmann::json values = nlohmann::json::array();
    for (const auto& [s, v] : watch->kept()) {
      kept.push_back(s);
      values.push_back({s, v});
    }
    checkpoints->save_best(step, loader->state(), plan.batch_size, kept);
    const double value = metric_value(result, best_metric);
    const std::string line = "best  step " + std::to_string(step) + ": " + to_string(best_metric) +
                             " " + number(value) +
                             (kept.front() == step ? " (the best so far)" : "") + ", " +
                             std::to_string(kept.size()) + " kept";
    nlohmann::json record = {
        {"event", "best"}, {"step", step},   {"metric", to_string(best_metric)},
        {"value", value},  {"kept", values}, {"message", line}};
    if (verdict.evicted) record["evicted"] = *verdict.evicted;
    log(std::move(record));
    say(line);
  }
  if (!verdict.stop) return false;
  const std::string line = "early stop at step " + std::to_string(step) + ": " +
                           to_string(stop_metric) + " has not improved by more than " +
                           number(config.train.early_stop_min_delta) + " in " +
                           std::to_string(watch->since_best()) + " evaluations (best " +
                           number(watch->stop_best()) + ")";
  log({{"event", "early_stop"},
       {"step", step},
       {"metric", to_string(stop_metric)},
       {"best", watch->stop_best()},
       {"evaluations", watch->since_best()},
       {"message", line}});
  say(line);
  return true;
}

// Whether the uninterrupted run evaluated at `step` between steps (train.eval_every). An
// evaluation at an epoch's end (eval_every = 0) needs no repeat: a checkpoint of an epoch's last
// step resumes inside that epoch, whose end the loop reaches again and evaluates.
bool Trainer::Impl::evaluation_due(std::int64_t step) const {
  const std::int64_t every = config.train.eval_every;
  return !config.data.val_path.empty() && every > 0 && step > 0 && step % every == 0;
}

// A checkpoint of a step is written before that step's evaluation: the watch state it holds
// does not know it. The resumed run repeats that evaluation (the same model on the same data)
// so that its best checkpoints and early stopping decide as the uninterrupted run's did.
void Trainer::Impl::evaluate_again_after_resume(LoopState& loop) {
  if (!watch->active() || loop.stop || watch->evaluated_at() >= loop.step ||
      !evaluation_due(loop.step)) {
    return;
  }
  say("eval  step " + std::to_string(loop.step) +
      ": again, its outcome was not in the checkpoint (best checkpoints, early stopping)");
  stop_on_signal(loop, evaluate_now(loop));
}

}  // namespace cohort::train
