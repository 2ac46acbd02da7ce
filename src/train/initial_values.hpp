// A restarting trainer's model holds the values it was built with until the checkpoint load
// replaces them. The load reads into them in place (no new memory to fault in and zero: about
// half of a restart's load time on the build VMs), so a candidate found corrupt half-way can
// leave them half-written; when no candidate loads, remake_values() makes them again and the run
// starts as if there had been no checkpoint (TrainCheckpoints::set_initial_values).
#pragma once

#include <optional>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include "cohort/models/model.hpp"
#include "cohort/settings/config.hpp"

namespace cohort::train {

// The CPU generator's state (a copy), and setting it back (also what a checkpoint carries per
// rank).
at::Tensor cpu_generator_state();
void set_cpu_generator_state(const at::Tensor& state);
// The default generator of the rank's GPU (comm::rank_device), which draws its dropout masks on
// the device; nullopt on a rank without one.
std::optional<at::Tensor> device_generator_state();
void set_device_generator_state(const at::Tensor& state);

// Builds `config`'s model again from the generator state `generator` (the state it was first
// built from: the same draws, so the same values) and copies its parameters and buffers into
// `model`'s by name. The generator is left where it was. Error when a tensor of `model` is not
// made again with its shape (a model built otherwise).
void remake_values(const ModelConfig& config, const ModelInput& input, const at::Tensor& generator,
                   torch::nn::Module& model);

}  // namespace cohort::train
