// Task's evaluation: each metric kept as sums over samples that add across ranks, then finished
// once on the reduced sums (R² from the sums of y, y² and the squared errors; micro-F1 from the
// true and false positive and negative counts), so that the metrics are the whole set's, not a
// mean of the ranks'.
#include <ATen/ops/stack.h>
#include <ATen/ops/topk.h>
#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "cohort/error.hpp"
#include "models/task.hpp"

namespace cohort::models {

// The run's settings by their own names.
using namespace ::cohort::settings;  // NOLINT(google-build-using-namespace)

namespace F = torch::nn::functional;

namespace {

// Where each value sits in the sums of a task.
enum CrossEntropySum { kCeLoss, kCeWeight, kCeCorrect, kCeTopK, kCeCount, kCeSums };
enum ValuesSum {
  kLoss,
  kValues,
  kSamples,
  kAbsError,
  kSqError,
  kCorrect,
  kTruePos,
  kFalsePos,
  kFalseNeg,
  kMultilabelSums
};
constexpr std::size_t kRegressionSums = kCorrect;  // then Σy, Σy², Σe² per output value

double total(const at::Tensor& t) { return t.sum().item<double>(); }

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string metric_names(const EvalResult& result) {
  std::string names = "loss";
  for (const auto& metric : result.metrics) names += ", " + metric.first;
  return names;
}

}  // namespace

std::size_t Task::sum_count() const {
  if (uses_cross_entropy(kind_)) return kCeSums;
  if (kind_ == TaskKind::kMultilabel) return kMultilabelSums;
  return kRegressionSums + 3 * static_cast<std::size_t>(outputs_);
}

void Task::accumulate(const at::Tensor& output, const at::Tensor& targets,
                      std::vector<double>& sums) const {
  if (uses_cross_entropy(kind_)) {
    const at::Tensor logits = output.flatten(0, output.dim() - 2);
    const at::Tensor labels = targets.to(output.device()).flatten();
    auto o = F::CrossEntropyFuncOptions()
                 .label_smoothing(options_.label_smoothing)
                 .reduction(torch::kNone);
    const at::Tensor weights = class_weights(logits);
    if (weights.defined()) o = o.weight(weights);
    sums[kCeLoss] += total(F::cross_entropy(logits, labels, o).to(at::kDouble));
    sums[kCeWeight] += weights.defined() ? total(weights.index_select(0, labels).to(at::kDouble))
                                         : static_cast<double>(labels.numel());
    sums[kCeCorrect] += total(logits.argmax(-1).eq(labels));
    const std::int64_t k = std::min<std::int64_t>(options_.top_k, logits.size(-1));
    const at::Tensor top = std::get<1>(at::topk(logits, k, -1));
    sums[kCeTopK] += total(top.eq(labels.unsqueeze(1)).any(1));
    sums[kCeCount] += static_cast<double>(labels.numel());
    return;
  }
  const auto [out, target] = as_values(output.to(at::kFloat), targets);
  sums[kLoss] += total(values_loss(out, target, false).to(at::kDouble));
  sums[kValues] += static_cast<double>(out.numel());
  sums[kSamples] += static_cast<double>(out.size(0));
  if (kind_ == TaskKind::kMultilabel) {
    const at::Tensor predicted = out.gt(0), actual = target.gt(0.5);
    sums[kCorrect] += total(predicted.eq(actual));
    sums[kTruePos] += total(predicted.logical_and(actual));
    sums[kFalsePos] += total(predicted.logical_and(actual.logical_not()));
    sums[kFalseNeg] += total(predicted.logical_not().logical_and(actual));
    return;
  }
  const at::Tensor y = target.to(at::kDouble), error = out.to(at::kDouble) - y;
  sums[kAbsError] += total(error.abs());
  sums[kSqError] += total(error.square());
  const at::Tensor per_output =
      at::stack({y.sum(0), y.square().sum(0), error.square().sum(0)}).t().contiguous().cpu();
  const double* p = per_output.data_ptr<double>();
  for (std::int64_t i = 0; i < per_output.numel(); ++i) sums[kRegressionSums + i] += p[i];
}

EvalResult Task::finish(const std::vector<double>& s) const {
  EvalResult r;
  r.task = to_string(kind_);
  const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  if (uses_cross_entropy(kind_)) {
    r.loss = ratio(s[kCeLoss], s[kCeWeight]);
    r.accuracy = ratio(s[kCeCorrect], s[kCeCount]);
    r.perplexity = std::exp(r.loss);
    r.samples = static_cast<std::int64_t>(s[kCeCount]);
    r.per_token = kind_ == TaskKind::kLanguageModel;
    if (r.per_token) {
      r.metrics = {{"perplexity", r.perplexity}, {"accuracy", r.accuracy}};
    } else {
      r.metrics = {{"accuracy", r.accuracy}, {"perplexity", r.perplexity}};
      // Top-k of k or fewer classes is 1 whatever the model does: not reported.
      if (outputs_ > options_.top_k) {
        r.metrics.emplace_back("top" + std::to_string(options_.top_k) + "_accuracy",
                               ratio(s[kCeTopK], s[kCeCount]));
      }
    }
    return r;
  }
  r.loss = ratio(s[kLoss], s[kValues]);
  r.samples = static_cast<std::int64_t>(s[kSamples]);
  if (kind_ == TaskKind::kMultilabel) {
    r.accuracy = ratio(s[kCorrect], s[kValues]);
    const double f1 = ratio(2 * s[kTruePos], 2 * s[kTruePos] + s[kFalsePos] + s[kFalseNeg]);
    r.metrics = {{"label_accuracy", r.accuracy}, {"micro_f1", f1}};
    return r;
  }
  // R² per output value, averaged over them (scikit-learn's r2_score, uniform_average).
  double r2 = 0;
  const double n = s[kSamples];
  for (std::int64_t i = 0; i < outputs_; ++i) {
    const double* y = &s[kRegressionSums + 3 * static_cast<std::size_t>(i)];
    const double total_squares = y[1] - y[0] * y[0] / std::max(n, 1.0);
    r2 += total_squares > 0 ? 1 - y[2] / total_squares : 0;
  }
  r.metrics = {{"mse", ratio(s[kSqError], s[kValues])},
               {"mae", ratio(s[kAbsError], s[kValues])},
               {"r2", outputs_ > 0 ? r2 / static_cast<double>(outputs_) : 0}};
  return r;
}

double EvalResult::metric(const std::string& name) const {
  for (const auto& [key, value] : metrics) {
    if (key == name) return value;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

double metric_value(const EvalResult& result, TargetMetric metric) {
  switch (metric) {
    case TargetMetric::kAccuracy:
      return result.accuracy;
    case TargetMetric::kLoss:
      return result.loss;
    case TargetMetric::kPerplexity:
      return result.perplexity;
    case TargetMetric::kMae:
      return result.metric("mae");
    case TargetMetric::kR2:
      return result.metric("r2");
    case TargetMetric::kMicroF1:
      return result.metric("micro_f1");
    case TargetMetric::kNone:
      break;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::string eval_text(const EvalResult& result) {
  std::string text = "loss " + fixed(result.loss, 4);
  for (const auto& [name, value] : result.metrics) {
    text += " " + name + " " + fixed(value, name == "perplexity" ? 3 : 4);
  }
  return text;
}

void check_target_metric(TargetMetric metric, const Task& task, const char* key) {
  const TaskKind kind = task.kind();
  bool reported = true;
  switch (metric) {
    case TargetMetric::kAccuracy:
      reported = kind != TaskKind::kRegression;
      break;
    case TargetMetric::kPerplexity:
      reported = uses_cross_entropy(kind);
      break;
    case TargetMetric::kMae:
    case TargetMetric::kR2:
      reported = kind == TaskKind::kRegression;
      break;
    case TargetMetric::kMicroF1:
      reported = kind == TaskKind::kMultilabel;
      break;
    default:
      break;
  }
  const EvalResult probe = task.finish(std::vector<double>(task.sum_count(), 0.0));
  COHORT_CHECK(reported, ConfigError, key, " = ", to_string(metric),
               ": train.task = ", to_string(kind), " does not report it (it reports ",
               metric_names(probe), ")");
}

}  // namespace cohort::models
