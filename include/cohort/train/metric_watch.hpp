// What a run remembers of its validation metric between evaluations, for the best checkpoints
// (checkpoint.best_metric, best_keep) and early stopping (train.early_stop_patience): Lightning's
// ModelCheckpoint(monitor=..., save_top_k=K) and EarlyStopping(monitor=..., patience=N,
// min_delta=d). Pure decisions, no LibTorch: the trainer feeds each evaluation in, saves and
// stops as told, and keeps the state in every checkpoint (as_values/from_values) so that a
// resumed run decides exactly as the uninterrupted one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cohort/settings/config.hpp"

namespace cohort::train {

// accuracy, r2, micro_f1: higher is better; loss, perplexity, mae: lower.
bool higher_is_better(TargetMetric metric);

// `value` beats `best` by more than `min_delta` in the metric's direction. Nothing beats a NaN
// value's absence: a NaN `best` (no evaluation yet) is beaten by any finite value; a NaN or
// infinite `value` beats nothing.
bool improves(double value, double best, bool higher, double min_delta);

struct WatchOptions {
  TargetMetric best_metric = TargetMetric::kNone;  // none: no best checkpoints
  std::int64_t best_keep = 1;
  TargetMetric stop_metric = TargetMetric::kNone;  // none: no early stopping
  std::int64_t patience = 0;
  double min_delta = 0;
};

// The outcome of one evaluation.
struct WatchVerdict {
  bool keep = false;                    // this step is now one of the best K: save it, keep it
  std::optional<std::int64_t> evicted;  // a step that left the best K (retention may delete it)
  bool stop = false;                    // `patience` evaluations without improvement
};

class MetricWatch {
 public:
  static constexpr std::int64_t kMaxBestKeep = 32;
  // 6 + 2 * kMaxBestKeep doubles: [last evaluated step, best metric, stop metric, stop best,
  // evaluations since it, count, (step, value) x count, padding]. A state of another metric
  // (the config changed between starts) is dropped at load.
  static constexpr std::size_t kStateSize = 6 + 2 * kMaxBestKeep;

  explicit MetricWatch(WatchOptions options);

  bool active() const;
  // As constructed (best_keep clamped): the metrics it watches.
  const WatchOptions& options() const { return options_; }
  // Feeds the evaluation at `step`: `best_value` of options.best_metric, `stop_value` of
  // options.stop_metric (either NaN when that metric is off or missing).
  WatchVerdict observe(std::int64_t step, double best_value, double stop_value);

  // The best K (step, value), best first (equal values: the earlier step first).
  const std::vector<std::pair<std::int64_t, double>>& kept() const { return kept_; }
  std::int64_t since_best() const { return since_best_; }
  double stop_best() const { return stop_best_; }
  // The step of the last evaluation this state includes (-1: none).
  std::int64_t evaluated_at() const { return evaluated_at_; }

  std::vector<double> as_values() const;
  // The state of a checkpoint at step `step`; an error text when the values cannot be one this
  // class wrote for that step (a count over kMaxBestKeep, a kept step after `step`, ...).
  std::string from_values(const std::vector<double>& values, std::int64_t step);

 private:
  WatchOptions options_;
  std::int64_t evaluated_at_ = -1;
  double stop_best_;
  std::int64_t since_best_ = 0;
  std::vector<std::pair<std::int64_t, double>> kept_;
};

}  // namespace cohort::train
