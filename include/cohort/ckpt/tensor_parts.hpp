// Tensor-parallel parts in a checkpoint (docs/formats/checkpoint.md): a parameter split over a
// tensor group of t ranks is saved as "<kind>.<param>.tp<r>of<t><tail>" per rank r (kind
// "model" or "optim", tail "" or an optimizer state such as ".exp_avg"), each with
// "layout.<param>.tp<r>of<t>" = [dim, whole, kept indices...]: the rank kept those slices of
// dimension `dim` (of length `whole`) of the whole parameter. The parts are joined back into the
// whole tensor from these, whatever t wrote them: a run with another parallel.tensor cuts its own
// parts from it, and `cohort ckpt export` writes whole tensors.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <optional>
#include <string>

#include "cohort/ckpt/manifest.hpp"
#include "cohort/ckpt/reader.hpp"

namespace cohort::ckpt {

// The split parameters a checkpoint holds, with the tensor size that wrote them (from its
// layout entries); empty for a checkpoint without tensor parallelism.
std::map<std::string, int> tensor_split_params(const Manifest& manifest);

// The whole tensor's name of a stored part ("optim.<param>.tp1of2.exp_avg" ->
// "optim.<param>.exp_avg"), or nullopt when `stored` is not a part (nor a layout entry).
std::optional<std::string> joined_name(const std::string& stored,
                                       const std::map<std::string, int>& split);
bool is_layout_entry(const std::string& stored);

// The whole tensor `name` ("<kind>.<param><tail>"), joined from its parts; nullopt when `name`
// is not a split tensor of this checkpoint. IoError naming the checkpoint and the tensor when a
// part or its layout is missing, malformed, or the parts do not make the whole exactly once.
std::optional<at::Tensor> read_joined(CheckpointReader& reader, const std::string& name,
                                      bool verify);

}  // namespace cohort::ckpt
