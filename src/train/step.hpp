// Internal pieces of the trainer shared by its files: the loss, evaluation, and the metrics log.
#pragma once

#include <functional>
#include <optional>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "cohort/comm/communicator.hpp"
#include "cohort/data/dataset.hpp"
#include "cohort/models/model.hpp"
#include "cohort/train/trainer.hpp"

namespace cohort::models {
class Task;
}  // namespace cohort::models

namespace cohort::train {

class Parallelism;

// Evaluates the model on this replica's contiguous range of the validation set (split over the
// data-parallel group; a replica's stages and tensor ranks read the same range): buffers
// broadcast over the data group, the host sums of the ranks that compute the loss all-reduced
// over `control` (CPU, the world). Collective. Leaves the model in training mode.
// How the validation set is read: as the training set is (data.max_length, data.transform in
// eval mode, data.target); the task's metrics.
struct EvalOptions {
  const models::Task* task = nullptr;
  std::int64_t batch_size = 0;
  std::int64_t max_length = 0;
  std::string transform;
  std::string target;
  std::int64_t read_delay_ms = 0;  // debug.data_delay_ms: a slow filesystem
  // Collective, called by every rank after each batch (the same number of times on every rank):
  // a signal to stop for, or 0. A non-zero answer abandons the evaluation: evaluate() returns
  // nullopt and `*stopped_by` holds it.
  std::function<int()> poll;
  int* stopped_by = nullptr;
};
std::optional<EvalResult> evaluate(Parallelism& parallel, const std::string& path,
                                   const EvalOptions& options, comm::Communicator& control);

// bf16 autocast for the forward pass (train.precision = bf16), as torch.autocast does it: inside
// the scope, matrix products and convolutions run in bfloat16 while weights, gradients, the loss
// and the all-reduce stay float32. CUDA autocast for a model on a GPU, CPU autocast otherwise.
// Backward runs outside the scope (autograd replays the casts). Scopes nest; not thread-safe
// across threads that train concurrently (autocast state is thread-local in LibTorch).
class AutocastScope {
 public:
  AutocastScope(bool enabled, bool cuda);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_, cuda_, was_enabled_ = false;
};

// Makes every rank's buffers (BatchNorm running statistics) rank 0's. Collective.
void broadcast_buffers(torch::nn::Module& model, comm::Communicator& comm);

}  // namespace cohort::train
