// Internal pieces of the trainer shared by its files: the loss, evaluation, and the metrics log.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "cohort/comm/communicator.hpp"
#include "cohort/data/dataset.hpp"
#include "cohort/train/model.hpp"
#include "cohort/train/trainer.hpp"

namespace cohort::train {

// Mean cross-entropy: logits [B, C] against int64 labels [B], or [B, L, V] against [B, L].
at::Tensor loss_of(const at::Tensor& logits, const at::Tensor& targets);

// Evaluates the model on this rank's contiguous range of the validation set and all-reduces the
// sums over comm. Collective. Leaves the model in training mode.
EvalResult evaluate(Model& model, const std::string& path, std::int64_t batch_size,
                    comm::Communicator& comm);

// Makes every rank's buffers (BatchNorm running statistics) rank 0's. Collective.
void broadcast_buffers(Model& model, comm::Communicator& comm);

}  // namespace cohort::train
