#include "data/buffer_pool.hpp"

#include <ATen/ops/empty.h>

#include <functional>

namespace cohort::data {

at::Tensor* BufferPool::find_free(const std::function<bool(const at::Tensor&)>& fits) {
  for (auto& tensor : pool_) {
    if (tensor.use_count() == 1 && tensor.storage().use_count() == 1 && fits(tensor)) {
      return &tensor;
    }
  }
  return nullptr;
}

void BufferPool::keep(const at::Tensor& tensor) {
  if (pool_.size() < capacity_) {
    pool_.push_back(tensor);
    return;
  }
  // Full: replace a free entry (the workload changed shape), or keep nothing.
  for (auto& entry : pool_) {
    if (entry.use_count() == 1 && entry.storage().use_count() == 1) {
      entry = tensor;
      return;
    }
  }
}

at::Tensor BufferPool::empty(at::IntArrayRef shape, const at::TensorOptions& options) {
  if (at::Tensor* free = find_free([&](const at::Tensor& t) {
        return t.sizes() == shape && t.dtype() == options.dtype() &&
               t.is_pinned() == options.pinned_memory();
      })) {
    return *free;
  }
  at::Tensor tensor = at::empty(shape, options);
  keep(tensor);
  return tensor;
}

at::Tensor BufferPool::bytes(std::size_t bytes) {
  const auto size = static_cast<std::int64_t>(bytes);
  if (at::Tensor* free = find_free([&](const at::Tensor& t) {
        return t.scalar_type() == at::kByte && t.dim() == 1 && t.numel() >= size &&
               t.numel() <= 2 * size + 4096;  // do not pin a huge buffer for a small batch
      })) {
    return free->narrow(0, 0, size);
  }
  at::Tensor tensor = at::empty({size}, at::TensorOptions().dtype(at::kByte));
  keep(tensor);
  return tensor;
}

}  // namespace cohort::data
