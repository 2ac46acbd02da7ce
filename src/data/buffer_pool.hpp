// BufferPool: recycles the host tensors a BatchReader hands out, so that the memory a batch is
// read into is warm (mapped, often still in cache) rather than fresh pages every step. A tensor
// is reused only when nothing else refers to it: the pool holds the one reference to its
// TensorImpl and its storage has no other user (no view of it survives). Whatever the consumer
// keeps is simply never reused. Used by one thread at a time (the reader's).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace cohort::data {

class BufferPool {
 public:
  explicit BufferPool(std::size_t capacity = 64) : capacity_(capacity) {}

  // An uninitialized tensor of this shape and these options.
  at::Tensor empty(at::IntArrayRef shape, const at::TensorOptions& options);
  // An uninitialized byte buffer of `bytes` (over a pooled one's memory).
  at::Tensor bytes(std::size_t bytes);
  // An uninitialized contiguous tensor of `shape` and `type` over a pooled byte buffer's memory.
  // Built directly on the buffer's storage (no view operators, no autograd view record): a
  // batch of many fields takes a few of these per step, and the operators cost microseconds.
  at::Tensor tensor(at::IntArrayRef shape, at::ScalarType type);

 private:
  at::Tensor* find_free(const std::function<bool(const at::Tensor&)>& fits);
  void keep(const at::Tensor& tensor);
  std::size_t capacity_;
  std::vector<at::Tensor> pool_;
};

}  // namespace cohort::data
