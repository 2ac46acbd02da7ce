#include <ATen/ops/tensor.h>
#include <torch/autograd.h>
#include <torch/nn/functional/loss.h>

#include <optional>

#include "cohort/data/reader.hpp"
#include "cohort/data/transform.hpp"
#include "cohort/error.hpp"
#include "train/parallelism.hpp"
#include "train/step.hpp"
#include "train/task.hpp"

namespace cohort::train {

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
  const Task& task = *eval.task;
  std::vector<double> sums(task.sum_count(), 0.0);
  for (std::int64_t begin = first; begin < last; begin += batch_size) {
    std::vector<std::int64_t> indices;
    for (std::int64_t i = begin; i < std::min(last, begin + batch_size); ++i) indices.push_back(i);
    data::Batch batch = reader.read(indices);
    if (preprocess) {
      batch.indices = indices;
      preprocess->apply(batch, 0);
    }
    const at::Tensor output = parallel.forward_only(batch);
    if (!parallel.scores()) continue;  // another rank computes this output (too)
    task.accumulate(output.to(at::kFloat), batch.targets, sums);
  }
  at::Tensor reduced = at::tensor(sums, at::kDouble);
  control.all_reduce(reduced);  // host scalars: the CPU communicator, whatever the model's device
  model.train();
  const double* s = reduced.data_ptr<double>();
  return task.finish({s, s + reduced.numel()});
}

}  // namespace cohort::train
