#include "data/buffer_pool.hpp"

#include <ATen/ops/empty.h>
#include <c10/core/TensorImpl.h>

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
  return tensor({static_cast<std::int64_t>(bytes)}, at::kByte);
}

at::Tensor BufferPool::tensor(at::IntArrayRef shape, at::ScalarType type) {
  std::int64_t size = static_cast<std::int64_t>(c10::elementSize(type));
  for (const auto d : shape) size *= d;  // callers check their shapes' sizes for overflow
  const at::Tensor* buffer = find_free([&](const at::Tensor& t) {
    return t.scalar_type() == at::kByte && t.dim() == 1 && t.numel() >= size &&
           t.numel() <= 2 * size + 4096;  // do not pin a huge buffer for a small batch
  });
  at::Tensor fresh;
  if (buffer == nullptr) {
    // A little room above the request, so that the next batch's slightly larger ragged field
    // finds this buffer free rather than allocating another.
    fresh = at::empty({size + size / 8 + 64}, at::TensorOptions().dtype(at::kByte));
    keep(fresh);
    buffer = &fresh;
  }
  // What at::empty builds, over the buffer's storage: the storage's extra reference is what
  // keeps the buffer out of find_free() while the tensor lives.
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::Storage(buffer->storage()), buffer->key_set(), caffe2::TypeMeta::fromScalarType(type));
  impl->set_sizes_contiguous(shape);
  return at::Tensor(std::move(impl));
}

}  // namespace cohort::data
