// EvalResult: what an evaluation of a model on a dataset found (the task's loss and metrics), as
// the trainer's evaluations, `cohort eval`, early stopping and train.target_metric read it. Plain
// values, no LibTorch: a task makes it from sums that add across ranks (models/task.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cohort::settings {
enum class TargetMetric;  // config.hpp
}  // namespace cohort::settings

namespace cohort::models {

struct EvalResult {
  double loss = 0;           // mean per sample (per token for language models, per value for
                             // regression and multilabel)
  double accuracy = 0;       // classification; language models: per token; multilabel: per label
  double perplexity = 0;     // classification and language models: exp(loss)
  std::int64_t samples = 0;  // targets evaluated: samples, or tokens for language models
  bool per_token = false;    // a language model: loss and counts are per token
  std::string task;          // train.task, resolved: "classification", "regression", ...
  // The task's metrics by name, in the order the eval line prints them: classification accuracy,
  // topK_accuracy; regression mse, mae, r2; multilabel label_accuracy, micro_f1; language model
  // perplexity, accuracy.
  std::vector<std::pair<std::string, double>> metrics;
  // NaN when the task has no such metric.
  double metric(const std::string& name) const;
};

// The value of a validation metric of config.hpp's list (NaN: none, or not the task's).
double metric_value(const EvalResult& result, settings::TargetMetric metric);

// "loss 0.2529 accuracy 0.9721 perplexity 1.288 top5_accuracy 0.9972": the loss, then the metrics.
std::string eval_text(const EvalResult& result);

}  // namespace cohort::models

// The trainer's namespace sees the models' names as before (cohort::train::Model, ...): the train
// module, and plugins and programs written against cohort/train/model.hpp, use them unchanged.
namespace cohort::train {
using namespace ::cohort::models;  // NOLINT(google-build-using-namespace)
}  // namespace cohort::train
