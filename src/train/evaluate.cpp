#include <ATen/ops/tensor.h>
#include <torch/autograd.h>
#include <torch/nn/functional/loss.h>

#include <chrono>
#include <optional>
#include <thread>

#include "cohort/data/reader.hpp"
#include "cohort/data/transform.hpp"
#include "cohort/error.hpp"
#include "models/task.hpp"
#include "train/parallelism.hpp"
#include "train/step.hpp"

namespace cohort::train {

void broadcast_buffers(torch::nn::Module& model, comm::Communicator& comm) {
  for (auto& buffer : model.buffers()) comm.broadcast_async(buffer, 0)->wait();
}

namespace {

// Samples [begin, end) of the set, as training reads them (with the deterministic part of its
// transform); eval.read_delay_ms first, a test hook for a slow filesystem.
data::Batch read_batch(data::BatchReader& reader, std::optional<data::BatchTransform>& preprocess,
                       std::int64_t begin, std::int64_t end, const EvalOptions& eval) {
  if (eval.read_delay_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(eval.read_delay_ms));
  }
  std::vector<std::int64_t> indices;
  for (std::int64_t i = begin; i < end; ++i) indices.push_back(i);
  data::Batch batch = reader.read(indices);
  if (preprocess) {
    batch.indices = indices;
    preprocess->apply(batch, 0);
  }
  return batch;
}

}  // namespace

// Every rank takes part in as many batches as the rank with the most (its share is at most one
// sample longer), so that eval.poll's agreement runs the same number of times everywhere.
std::optional<EvalResult> evaluate(Parallelism& parallel, const std::string& path,
                                   const EvalOptions& eval, comm::Communicator& control) {
  const std::int64_t batch_size = eval.batch_size;
  torch::nn::Module& model = parallel.trained();
  comm::Communicator& comm = parallel.data_group();
  broadcast_buffers(model, comm);
  parallel.set_training(false);
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
  const Task& task = *eval.task;
  std::vector<double> sums(task.sum_count(), 0.0);
  const std::int64_t longest = (n + comm.size() - 1) / comm.size();
  const std::int64_t batches = (longest + batch_size - 1) / batch_size;
  for (std::int64_t b = 0; b < batches; ++b) {
    if (eval.poll && b > 0) {
      if (const int signal = eval.poll(); signal != 0) {
        parallel.set_training(true);
        if (eval.stopped_by != nullptr) *eval.stopped_by = signal;
        return std::nullopt;
      }
    }
    const std::int64_t begin = first + b * batch_size;
    if (begin >= last) continue;
    const data::Batch batch =
        read_batch(reader, preprocess, begin, std::min(last, begin + batch_size), eval);
    const at::Tensor output = parallel.forward_only(batch);
    if (!parallel.scores()) continue;  // another rank computes this output (too)
    task.accumulate(output.to(at::kFloat), batch.targets, sums);
  }
  at::Tensor reduced = at::tensor(sums, at::kDouble);
  control.all_reduce(reduced);  // host scalars: the CPU communicator, whatever the model's device
  parallel.set_training(true);
  const double* s = reduced.data_ptr<double>();
  return task.finish({s, s + reduced.numel()});
}

}  // namespace cohort::train
