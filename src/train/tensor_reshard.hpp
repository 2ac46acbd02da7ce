// Resuming a tensor-parallel checkpoint with another parallel.tensor: the wanted tensors that
// the checkpoint does not hold under their own names are joined from its parts
// (ckpt/tensor_parts.hpp) and cut as this rank cuts them.
#pragma once

#include <map>
#include <string>

#include "cohort/ckpt/checkpoint.hpp"
#include "cohort/pipeline/tensor_parallel.hpp"

namespace cohort::train {

// `mine`: this rank's split parameters and how it cuts them (empty without tensor parallelism);
// `size`: this run's parallel.tensor.
ckpt::TensorSource tensor_reshard_source(std::map<std::string, pipeline::SplitLayout> mine,
                                         int size);

}  // namespace cohort::train
