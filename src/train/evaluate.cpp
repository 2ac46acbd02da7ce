#include <ATen/ops/tensor.h>
#include <torch/autograd.h>
#include <torch/nn/functional/loss.h>

#include <cmath>
#include <optional>

#include "cohort/data/reader.hpp"
#include "cohort/data/transform.hpp"
#include "cohort/error.hpp"
#include "train/parallelism.hpp"
#include "train/step.hpp"

namespace cohort::train {

at::Tensor loss_of(const at::Tensor& logits, const at::Tensor& targets) {
  // Class targets come from the dataset file: out of range, LibTorch would stop with an internal
  // error and a backtrace. Two reductions over one batch of labels cost next to nothing.
  if (!at::isFloatingType(targets.scalar_type()) && targets.numel() > 0) {
    const std::int64_t classes = logits.size(-1);
    const std::int64_t low = targets.min().item<std::int64_t>();
    const std::int64_t high = targets.max().item<std::int64_t>();
    COHORT_CHECK(low >= 0 && high < classes, IoError, "dataset: a class target is ",
                 low < 0 ? low : high, ", outside the model's ", classes, " classes 0..",
                 classes - 1, " (dataset '/targets' or model.classes)");
  }
  // Batches stay on the host (pinned when CUDA is present); the model may end on a GPU
  // (parallel.devices): the targets follow the logits, a no-op when both are on the host.
  const at::Tensor on_device = targets.to(logits.device(), /*non_blocking=*/true);
  if (logits.dim() == 3) {
    return torch::nn::functional::cross_entropy(logits.flatten(0, 1), on_device.flatten());
  }
  return torch::nn::functional::cross_entropy(logits, on_device);
}

void broadcast_buffers(torch::nn::Module& model, comm::Communicator& comm) {
  for (auto& buffer : model.buffers()) comm.broadcast_async(buffer, 0)->wait();
}

EvalResult evaluate(Parallelism& parallel, const std::string& path, const EvalOptions& eval,
                    comm::Communicator& control) {
  const std::int64_t batch_size = eval.batch_size;
  torch::nn::Module& model = parallel.trained();
  comm::Communicator& comm = parallel.data_group();
  broadcast_buffers(model, comm);
  model.eval();
  torch::NoGradGuard no_grad;
  data::ReaderOptions options;
  options.pin_memory = false;
  options.max_length = eval.max_length;
  options.target = eval.target;
  data::BatchReader reader(path, options);
  std::optional<data::BatchTransform> preprocess;  // in eval mode: its deterministic part
  if (!eval.transform.empty()) preprocess.emplace(eval.transform, false);
  const std::int64_t n = reader.info().num_samples;
  const std::int64_t first = n * comm.rank() / comm.size();
  const std::int64_t last = n * (comm.rank() + 1) / comm.size();
  double loss_sum = 0, correct = 0, count = 0, per_token = 0;
  for (std::int64_t begin = first; begin < last; begin += batch_size) {
    std::vector<std::int64_t> indices;
    for (std::int64_t i = begin; i < std::min(last, begin + batch_size); ++i) indices.push_back(i);
    data::Batch batch = reader.read(indices);
    if (preprocess) {
      batch.indices = indices;
      preprocess->apply(batch, 0);
    }
    const at::Tensor logits = parallel.forward_only(batch);
    if (!parallel.scores()) continue;  // another rank computes these logits (too)
    per_token = logits.dim() == 3 ? 1 : 0;
    const double items = static_cast<double>(batch.targets.numel());  // samples, or tokens
    const at::Tensor targets = batch.targets.to(logits.device());     // once, for both sums
    loss_sum += loss_of(logits, targets).item<double>() * items;
    correct += logits.argmax(-1).eq(targets).sum().item<double>();
    count += items;
  }
  at::Tensor sums = at::tensor({loss_sum, correct, count, per_token}, at::kDouble);
  control.all_reduce(sums);  // host scalars: the CPU communicator, whatever the model's device
  model.train();
  EvalResult result;
  const auto* s = sums.data_ptr<double>();
  result.samples = static_cast<std::int64_t>(s[2]);
  result.loss = s[2] > 0 ? s[0] / s[2] : 0;
  result.accuracy = s[2] > 0 ? s[1] / s[2] : 0;
  result.perplexity = std::exp(result.loss);
  result.per_token = s[3] > 0;
  return result;
}

}  // namespace cohort::train
