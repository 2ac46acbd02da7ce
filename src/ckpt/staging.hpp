// Where load_latest() reads a candidate checkpoint's tensors before it knows the candidate good,
// and how they reach the wanted tensors once every rank has read and verified it (the commit):
//  - a fresh host tensor (NamedTensor::fresh: made only to be filled, or holding values its owner
//    can make again) is read in place;
//  - a host tensor that alone fills its storage (a parameter or a buffer that owns its memory) is
//    read into a new storage of the same size, and the commit exchanges the two storages' memory:
//    no copy, and every view of the storage sees the loaded values as after a copy_ (the old
//    memory is freed with the staging tensor);
//  - any other (on a GPU, non-contiguous, a view into a larger storage, a tensor-parallel part)
//    into a staging tensor, committed by copy_.
// A candidate found corrupt half-way leaves the wanted tensors untouched except fresh ones. New
// staging memory is advised onto transparent huge pages before the read first touches it.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <vector>

#include "cohort/ckpt/checkpoint.hpp"

namespace cohort::ckpt {

class Staging {
 public:
  explicit Staging(const std::vector<NamedTensor>& into);
  // Where tensor i is read: contiguous, on the host, its shape.
  const at::Tensor& buffer(std::size_t i) const { return buffers_[i]; }
  // Tensor i came from elsewhere (a reshard source): committed by copy_.
  void replace(std::size_t i, at::Tensor buffer);
  const std::vector<at::Tensor>& buffers() const { return buffers_; }
  // Every rank has the candidate: the wanted tensors take its values.
  void commit(std::vector<NamedTensor>& into);

 private:
  enum class Commit { kNone, kSwap, kCopy };
  std::vector<at::Tensor> buffers_;
  std::vector<Commit> commits_;
};

// Advises a buffer the next write will touch first onto transparent huge pages.
void advise_huge_pages(const at::Tensor& buffer);

}  // namespace cohort::ckpt
