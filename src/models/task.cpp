#include "models/task.hpp"

#include <ATen/ops/tensor.h>
#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cohort/error.hpp"
#include "cohort/io/dtype.hpp"

namespace cohort::models {

// The run's settings by their own names.
using namespace ::cohort::settings;  // NOLINT(google-build-using-namespace)

namespace F = torch::nn::functional;

TaskOptions task_options(const TrainSection& train) {
  TaskOptions o;
  o.kind = train.task;
  o.loss = train.loss;
  o.label_smoothing = train.label_smoothing;
  o.class_weights = train.class_weights;
  o.huber_delta = train.huber_delta;
  o.top_k = train.top_k;
  return o;
}

namespace {

bool integral(io::DType dtype) {
  return dtype == io::DType::kUInt8 || dtype == io::DType::kUInt16 || dtype == io::DType::kInt32 ||
         dtype == io::DType::kInt64;
}

bool ragged_target(const data::DatasetInfo& info) {
  for (const auto& field : info.fields) {
    if (field.target && field.name == info.target) return field.ragged;
  }
  return false;
}

// "integer targets of shape []" for messages.
std::string targets_text(const data::DatasetInfo& info) {
  return std::string(integral(info.target_dtype) ? "integer" : "float") + " targets of shape " +
         io::shape_text(info.target_shape);
}

TaskKind infer(const data::DatasetInfo& info) {
  if (info.kind == data::DatasetKind::kTokens) return TaskKind::kLanguageModel;
  if (!integral(info.target_dtype)) return TaskKind::kRegression;
  COHORT_CHECK(info.target_shape.empty(), ConfigError, info.path, ": ", targets_text(info),
               " are not one class label per sample: set train.task (multilabel, regression)");
  return TaskKind::kClassification;
}

LossKind default_loss(TaskKind kind) {
  switch (kind) {
    case TaskKind::kRegression:
      return LossKind::kMse;
    case TaskKind::kMultilabel:
      return LossKind::kBce;
    default:
      return LossKind::kCrossEntropy;
  }
}

}  // namespace

Task::Task(const TaskOptions& options, const data::DatasetInfo& train_set)
    : options_(options), target_shape_(train_set.target_shape), dataset_(train_set.path) {
  kind_ = options.kind == TaskKind::kAuto ? infer(train_set) : options.kind;
  loss_ = options.loss == LossKind::kAuto ? default_loss(kind_) : options.loss;
  const std::string why = loss_task_mismatch(kind_, loss_);
  COHORT_CHECK(why.empty(), ConfigError, why);
  COHORT_CHECK(
      uses_cross_entropy(kind_) || (options.label_smoothing == 0 && options.class_weights.empty()),
      ConfigError,
      "train.label_smoothing and train.class_weights apply to cross_entropy only (task ",
      to_string(kind_), ")");
  check_dataset(train_set);
  if (kind_ == TaskKind::kClassification) outputs_ = train_set.classes;
  if (kind_ == TaskKind::kLanguageModel) outputs_ = train_set.vocab_size;
  if (kind_ == TaskKind::kRegression || kind_ == TaskKind::kMultilabel) {
    outputs_ = io::shape_numel(target_shape_);
  }
}

void Task::check_dataset(const data::DatasetInfo& info) const {
  const std::string task = "train.task = " + to_string(kind_);
  COHORT_CHECK(!ragged_target(info), ConfigError, info.path, ": target '", info.target,
               "' is ragged; ", task, " needs one fixed-shape target per sample (data.target)");
  COHORT_CHECK(info.target_shape == target_shape_, ConfigError, info.path, ": ", targets_text(info),
               ", the training set's are ", io::shape_text(target_shape_));
  const bool labels = integral(info.target_dtype);
  switch (kind_) {
    case TaskKind::kClassification:
      COHORT_CHECK(labels && info.target_shape.empty() && info.classes >= 1, ConfigError, info.path,
                   ": ", targets_text(info), " (", info.classes, " classes); ", task,
                   " needs one integer class label per sample and a class count");
      break;
    case TaskKind::kLanguageModel:
      COHORT_CHECK(info.kind == data::DatasetKind::kTokens && info.vocab_size > 0, ConfigError,
                   info.path, ": ", targets_text(info), "; ", task,
                   " needs a token dataset (next-token targets, a vocabulary size)");
      break;
    case TaskKind::kMultilabel:
      COHORT_CHECK(info.target_shape.size() == 1, ConfigError, info.path, ": ", targets_text(info),
                   "; ", task, " needs one 0/1 vector [labels] per sample");
      break;
    default:
      break;  // regression: any fixed-shape numbers
  }
}

void Task::check_output(const std::vector<std::int64_t>& sample) const {
  std::vector<std::int64_t> want = target_shape_;
  bool fits = false;
  if (kind_ == TaskKind::kClassification) {
    want = {outputs_};
    fits = sample.size() == 1 && sample[0] >= outputs_;
  } else if (kind_ == TaskKind::kLanguageModel) {
    want.push_back(outputs_);
    fits = sample.size() == 2 && sample[0] == target_shape_[0] && sample[1] >= outputs_;
  } else {
    fits = sample == target_shape_ || (target_shape_.empty() && sample == std::vector<int64_t>{1});
  }
  COHORT_CHECK(fits, ConfigError, "the model's output per sample ", io::shape_text(sample),
               " does not fit train.task = ", to_string(kind_), " on ", dataset_,
               ": its targets are ", io::shape_text(target_shape_), ", the output must be ",
               io::shape_text(want), kind_ == TaskKind::kClassification ? " (one per class)" : "");
  const auto weights = static_cast<std::int64_t>(options_.class_weights.size());
  COHORT_CHECK(weights == 0 || weights == sample.back(), ConfigError, "train.class_weights has ",
               weights, " weights for the model's ", sample.back(), " classes");
}

at::Tensor Task::class_weights(const at::Tensor& like) const {
  if (options_.class_weights.empty()) return {};
  return at::tensor(options_.class_weights, at::kDouble).to(like.device(), like.scalar_type());
}

std::pair<at::Tensor, at::Tensor> Task::as_values(const at::Tensor& output,
                                                  const at::Tensor& targets) const {
  const std::int64_t batch = output.size(0);
  at::Tensor target = targets.to(output.device(), output.scalar_type()).reshape({batch, -1});
  if (kind_ == TaskKind::kMultilabel && target.numel() > 0) {
    const double low = target.min().item<double>(), high = target.max().item<double>();
    COHORT_CHECK(low >= 0 && high <= 1, IoError, dataset_, ": a multilabel target is ",
                 low < 0 ? low : high, ", outside 0..1");
  }
  return {output.reshape({batch, -1}), target};
}

// Per value; the mean is what the losses' own mean reduction computes (apply_loss_reduction).
at::Tensor Task::values_loss(const at::Tensor& out, const at::Tensor& target, bool mean) const {
  at::Tensor loss;
  switch (loss_) {
    case LossKind::kMse:
      loss = F::mse_loss(out, target, F::MSELossFuncOptions().reduction(torch::kNone));
      break;
    case LossKind::kL1:
      loss = F::l1_loss(out, target, F::L1LossFuncOptions().reduction(torch::kNone));
      break;
    case LossKind::kHuber:
      loss = F::huber_loss(
          out, target,
          F::HuberLossFuncOptions().reduction(torch::kNone).delta(options_.huber_delta));
      break;
    default:
      loss = F::binary_cross_entropy_with_logits(
          out, target, F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone));
  }
  return mean ? loss.mean() : loss;
}

at::Tensor Task::loss(const at::Tensor& output, const at::Tensor& targets) const {
  const auto shape = output.sizes().vec();
  // One row per sample (the type and gradient are the step's check, trainable()): a model that
  // drops or adds rows would otherwise meet its targets inside LibTorch's loss, with LibTorch's
  // message or a silent broadcast.
  COHORT_CHECK(output.dim() >= 1 && targets.dim() >= 1 && shape[0] == targets.size(0), ConfigError,
               "the model returned ", io::shape_text(shape), " ",
               c10::toString(output.scalar_type()), " for a batch of ",
               targets.dim() >= 1 ? targets.size(0) : 0, " samples of ", dataset_,
               "; one floating-point row per sample is expected");
  check_output({shape.begin() + 1, shape.end()});
  if (!uses_cross_entropy(kind_)) {
    const auto [out, target] = as_values(output, targets);
    return values_loss(out, target, true);
  }
  // Class targets come from the dataset file: out of range, LibTorch would stop with an internal
  // error and a backtrace. Two reductions over one batch of labels cost next to nothing.
  if (targets.numel() > 0) {
    const std::int64_t classes = output.size(-1);
    const std::int64_t low = targets.min().item<std::int64_t>();
    const std::int64_t high = targets.max().item<std::int64_t>();
    COHORT_CHECK(low >= 0 && high < classes, IoError, "dataset: a class target is ",
                 low < 0 ? low : high, ", outside the model's ", classes, " classes 0..",
                 classes - 1, " (dataset '/targets' or model.classes)");
  }
  // Batches stay on the host (pinned when CUDA is present); the model may end on a GPU
  // (parallel.devices): the targets follow the output, a no-op when both are on the host.
  const at::Tensor on_device = targets.to(output.device(), /*non_blocking=*/true);
  auto o = F::CrossEntropyFuncOptions().label_smoothing(options_.label_smoothing);
  if (!options_.class_weights.empty()) o = o.weight(class_weights(output));
  return F::cross_entropy(output.flatten(0, output.dim() - 2), on_device.flatten(), o);
}

}  // namespace cohort::models
