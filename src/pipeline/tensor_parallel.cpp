#include "cohort/pipeline/tensor_parallel.hpp"

#include <ATen/ops/arange.h>
#include <c10/core/GradMode.h>
#include <torch/autograd.h>
#include <torch/nn/functional/linear.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>

#include "cohort/error.hpp"

namespace cohort::pipeline {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The group travels through the autograd context as an integer: IValues hold no raw pointers.
std::int64_t as_handle(comm::Communicator* group) {
  return static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(group));
}
comm::Communicator* from_handle(AutogradContext* ctx) {
  return reinterpret_cast<comm::Communicator*>(
      static_cast<std::intptr_t>(ctx->saved_data["group"].toInt()));
}

at::Tensor summed(const at::Tensor& x, comm::Communicator* group) {
  at::Tensor out = x.contiguous().clone();
  group->all_reduce(out);
  return out;
}

struct CopyToGroup : public torch::autograd::Function<CopyToGroup> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, std::int64_t group) {
    ctx->saved_data["group"] = group;
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {summed(grads[0], from_handle(ctx)), at::Tensor()};
  }
};

struct ReduceFromGroup : public torch::autograd::Function<ReduceFromGroup> {
  static at::Tensor forward(AutogradContext*, const at::Tensor& x, std::int64_t group) {
    return summed(x, reinterpret_cast<comm::Communicator*>(static_cast<std::intptr_t>(group)));
  }
  static variable_list backward(AutogradContext*, variable_list grads) {
    return {grads[0], at::Tensor()};
  }
};

bool trivial(comm::Communicator* group) { return group == nullptr || group->size() == 1; }

// Replaces a parameter's data by its selected part (a copy: the whole tensor is freed).
void keep(at::Tensor& parameter, std::int64_t dim, const at::Tensor& index) {
  at::NoGradGuard no_grad;
  parameter.set_data(parameter.index_select(dim, index.to(parameter.device())).contiguous());
}

}  // namespace

at::Tensor copy_to_group(const at::Tensor& x, comm::Communicator* group) {
  return trivial(group) ? x : CopyToGroup::apply(x, as_handle(group));
}

at::Tensor reduce_from_group(const at::Tensor& x, comm::Communicator* group) {
  return trivial(group) ? x : ReduceFromGroup::apply(x, as_handle(group));
}

ColumnParallelLinearImpl::ColumnParallelLinearImpl(std::int64_t in, std::int64_t out) {
  torch::nn::Linear whole(in, out);  // torch's own initialisation, drawn from the same generator
  weight = register_parameter("weight", whole->weight);
  bias = register_parameter("bias", whole->bias);
}

void ColumnParallelLinearImpl::shard(comm::Communicator* group, const at::Tensor& rows) {
  group_ = group;
  whole_ = weight.size(0);
  kept_ = rows.clone();
  keep(weight, 0, rows);
  keep(bias, 0, rows);
}

at::Tensor ColumnParallelLinearImpl::forward(const at::Tensor& x) {
  return torch::nn::functional::linear(copy_to_group(x, group_), weight, bias);
}

RowParallelLinearImpl::RowParallelLinearImpl(std::int64_t in, std::int64_t out) {
  torch::nn::Linear whole(in, out);
  weight = register_parameter("weight", whole->weight);
  bias = register_parameter("bias", whole->bias);
}

void RowParallelLinearImpl::shard(comm::Communicator* group, const at::Tensor& columns) {
  group_ = group;
  whole_ = weight.size(1);
  kept_ = columns.clone();
  keep(weight, 1, columns);
}

at::Tensor RowParallelLinearImpl::forward(const at::Tensor& x) {
  if (trivial(group_)) return torch::nn::functional::linear(x, weight, bias);
  return reduce_from_group(torch::nn::functional::linear(x, weight), group_) + bias;
}

bool ColumnParallelLinearImpl::split() const { return !trivial(group_); }
bool RowParallelLinearImpl::split() const { return !trivial(group_); }

std::vector<std::string> split_parameter_names(torch::nn::Module& module) {
  std::vector<std::string> names;
  for (const auto& item : module.named_modules("", /*include_self=*/false)) {
    const std::string& prefix = item.key();
    if (const auto* column = item.value()->as<ColumnParallelLinearImpl>()) {
      if (column->split()) {
        names.push_back(prefix + ".weight");
        names.push_back(prefix + ".bias");
      }
    } else if (const auto* row = item.value()->as<RowParallelLinearImpl>()) {
      if (row->split()) names.push_back(prefix + ".weight");
    }
  }
  return names;
}

std::map<std::string, SplitLayout> split_parameter_layouts(torch::nn::Module& module) {
  std::map<std::string, SplitLayout> layouts;
  for (const auto& item : module.named_modules("", /*include_self=*/false)) {
    const std::string& prefix = item.key();
    if (const auto* column = item.value()->as<ColumnParallelLinearImpl>()) {
      if (!column->split()) continue;
      layouts[prefix + ".weight"] = {0, column->whole(), column->kept()};
      layouts[prefix + ".bias"] = {0, column->whole(), column->kept()};
    } else if (const auto* row = item.value()->as<RowParallelLinearImpl>()) {
      if (row->split()) layouts[prefix + ".weight"] = {1, row->whole(), row->kept()};
    }
  }
  return layouts;
}

at::Tensor even_part(std::int64_t n, int rank, int size) {
  COHORT_CHECK(size >= 1 && n % size == 0, ConfigError, "cannot split ", n, " evenly over ", size,
               " tensor-parallel ranks");
  return at::arange(rank * n / size, (rank + 1) * n / size, at::kLong);
}

}  // namespace cohort::pipeline
