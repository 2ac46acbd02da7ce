// Tensor (Megatron-style) model parallelism: linear layers whose weights are split over the
// ranks of a tensor group (parallel.tensor adjacent ranks).
//
//   ColumnParallelLinear  y_r = x W_r^T + b_r : rank r holds rows (output features) of W and b.
//                         Its input enters through copy_to_group (identity forward, all-reduce
//                         of the gradient in backward: every rank's part of x's gradient).
//   RowParallelLinear     y = sum_r x_r W_r^T + b : rank r holds columns (input features) of W
//                         and reads its part x_r of the input (a column-parallel output); the
//                         partial products are all-reduced in forward (reduce_from_group,
//                         identity in backward); b is whole on every rank.
// A column layer followed by a row layer needs two all-reduces per pass (one forward, one
// backward), and everything between them (GELU, attention over a rank's heads) stays local.
// Both layers are built whole, initialised exactly as torch::nn::Linear is, and split later by
// shard(): a model initialised whole then split trains like the unsplit one (same seed, same
// values), which is what equivalence tests need. Parameters keep torch's names (weight, bias).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cohort/comm/communicator.hpp"

namespace cohort::pipeline {

// Identity forward; backward all-reduces the gradient over `group` (nullptr or 1 rank: identity).
at::Tensor copy_to_group(const at::Tensor& x, comm::Communicator* group);
// Forward all-reduces (sums) x over `group`; backward passes the gradient through.
at::Tensor reduce_from_group(const at::Tensor& x, comm::Communicator* group);

class ColumnParallelLinearImpl : public torch::nn::Module {
 public:
  ColumnParallelLinearImpl(std::int64_t in, std::int64_t out);
  // Keeps the output rows `rows` (int64 indices) and routes the input through `group`.
  void shard(comm::Communicator* group, const at::Tensor& rows);
  at::Tensor forward(const at::Tensor& x);
  bool split() const;                               // sharded over more than one rank
  const at::Tensor& kept() const { return kept_; }  // the rows kept (after shard())
  std::int64_t whole() const { return whole_; }     // output features before the split
  at::Tensor weight, bias;

 private:
  comm::Communicator* group_ = nullptr;
  at::Tensor kept_;
  std::int64_t whole_ = 0;
};
TORCH_MODULE(ColumnParallelLinear);

class RowParallelLinearImpl : public torch::nn::Module {
 public:
  RowParallelLinearImpl(std::int64_t in, std::int64_t out);
  // Keeps the input columns `columns` (int64 indices); outputs are summed over `group`.
  void shard(comm::Communicator* group, const at::Tensor& columns);
  at::Tensor forward(const at::Tensor& x);
  bool split() const;
  const at::Tensor& kept() const { return kept_; }  // the columns kept (after shard())
  std::int64_t whole() const { return whole_; }     // input features before the split
  at::Tensor weight, bias;

 private:
  comm::Communicator* group_ = nullptr;
  at::Tensor kept_;
  std::int64_t whole_ = 0;
};
TORCH_MODULE(RowParallelLinear);

// Names ("block0.qkv.weight", ...) of `module`'s parameters that are split over the tensor group
// (as opposed to replicated on each of its ranks), after shard().
std::vector<std::string> split_parameter_names(torch::nn::Module& module);

// How a split parameter is cut: this rank keeps the slices `kept` (int64 indices) of dimension
// `dim` of a whole parameter whose dimension `dim` is `whole` long. Another tensor size's parts
// are put back together, and cut again, from these (a checkpoint resumed with another
// parallel.tensor).
struct SplitLayout {
  std::int64_t dim = 0;
  std::int64_t whole = 0;
  at::Tensor kept;
};
std::map<std::string, SplitLayout> split_parameter_layouts(torch::nn::Module& module);

// The indices [rank * n / size, (rank + 1) * n / size) of an evenly split dimension of n.
at::Tensor even_part(std::int64_t n, int rank, int size);

}  // namespace cohort::pipeline
