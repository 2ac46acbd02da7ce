// The run's task (train.task): what the targets are, the loss that trains the model on them, and
// the evaluation metrics.
//
// Protocol: a Task is made once from the [train] keys and the training set: train.task = auto is
// resolved from the dataset (token set: language_model; integer labels: classification; float
// targets: regression), train.loss = auto from the task, and the targets are checked against both
// (ConfigError naming the dataset, its targets and the task). outputs() is what the model's last
// layer produces per sample (the classes, or the target's values). check_output() compares one
// sample's output shape with the targets' (ConfigError naming both shapes); the trainer runs it on
// a sample before the first step, and loss() on every batch. loss() is the mean over the batch's
// samples (tokens; values for regression and multilabel). Evaluation keeps sums that add across
// ranks (accumulate(), then an all-reduce, then finish()), so N ranks report the metrics of the
// whole set as one process does, up to the order of the sums.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/data/dataset.hpp"
#include "cohort/models/eval_result.hpp"
#include "cohort/settings/config.hpp"

namespace cohort::models {

using settings::LossKind;
using settings::TargetMetric;
using settings::TaskKind;
using settings::TrainSection;

struct TaskOptions {
  TaskKind kind = TaskKind::kAuto;
  LossKind loss = LossKind::kAuto;
  double label_smoothing = 0;
  std::vector<double> class_weights;
  double huber_delta = 1;
  std::int64_t top_k = 5;
};
TaskOptions task_options(const TrainSection& train);
// Classification and language models: trained by cross-entropy, evaluated by class counts.
inline bool uses_cross_entropy(TaskKind kind) {
  return kind == TaskKind::kClassification || kind == TaskKind::kLanguageModel;
}

class Task {
 public:
  Task(const TaskOptions& options, const data::DatasetInfo& train_set);

  TaskKind kind() const { return kind_; }
  LossKind loss_kind() const { return loss_; }
  std::int64_t outputs() const { return outputs_; }
  // A validation (or prediction) set whose targets are not the training set's kind: ConfigError.
  void check_dataset(const data::DatasetInfo& info) const;
  // One sample's output shape (the output's without the batch dimension) against the targets'.
  void check_output(const std::vector<std::int64_t>& sample_shape) const;

  at::Tensor loss(const at::Tensor& output, const at::Tensor& targets) const;

  std::size_t sum_count() const;
  // Adds one batch's evaluation sums (double, host) to `sums` (sum_count() values).
  void accumulate(const at::Tensor& output, const at::Tensor& targets,
                  std::vector<double>& sums) const;
  // The metrics of the summed `sums`.
  EvalResult finish(const std::vector<double>& sums) const;

 private:
  // The output as [B, values] and the targets as float [B, values] on its device.
  std::pair<at::Tensor, at::Tensor> as_values(const at::Tensor& output,
                                              const at::Tensor& targets) const;
  at::Tensor class_weights(const at::Tensor& like) const;
  at::Tensor values_loss(const at::Tensor& out, const at::Tensor& target, bool mean) const;

  TaskOptions options_;
  TaskKind kind_ = TaskKind::kClassification;
  LossKind loss_ = LossKind::kCrossEntropy;
  std::int64_t outputs_ = 0;
  std::vector<std::int64_t> target_shape_;  // one sample's
  std::string dataset_;                     // for messages
};

// train.target_metric names a metric `task` does not report: ConfigError.
void check_target_metric(TargetMetric metric, const Task& task,
                         const char* key = "train.target_metric");

}  // namespace cohort::models

// The trainer's namespace sees the models' names as before (cohort::train::Model, ...): the train
// module, and plugins and programs written against cohort/train/model.hpp, use them unchanged.
namespace cohort::train {
using namespace ::cohort::models;  // NOLINT(google-build-using-namespace)
}  // namespace cohort::train
