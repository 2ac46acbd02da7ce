// BatchTransform: a user's preprocessing, written in Python and saved as TorchScript
// (`data.transform = transform.pt`), applied by the loader's worker thread to each batch before
// it reaches the model; evaluation applies it too, with the module in eval mode.
//
// Protocol: the module's forward(inputs: Dict[str, Tensor], seeds: Tensor) -> Dict[str, Tensor]
// receives the batch's inputs by name ("inputs" for a sample dataset; every input field and mask
// for a field dataset) and one int64 seed per sample, a function of (seed, epoch, sample index)
// only, so that random choices made from it do not depend on the rank, the worker or a resume.
// It must return the same names, each with the same batch size and dtype: anything else, and any
// error inside it, is an IoError naming the file. `training` sets the module's mode (its
// `self.training`): random augmentation belongs under it, normalization outside it, so that
// evaluation sees the inputs training saw. One BatchTransform per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cohort/data/reader.hpp"

namespace cohort::data {

class BatchTransform {
 public:
  // IoError when the file is not a TorchScript module with a forward().
  BatchTransform(const std::string& path, bool training);
  ~BatchTransform();
  BatchTransform(const BatchTransform&) = delete;
  BatchTransform& operator=(const BatchTransform&) = delete;

  void apply(Batch& batch, std::uint64_t seed) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The seed of one sample: SplitMix64 of seed ^ (epoch * 0x9e3779b97f4a7c15) ^
// (index * 0xbf58476d1ce4e5b9), its top 63 bits (a non-negative int64). docs/data.md repeats it.
std::int64_t sample_seed(std::uint64_t seed, std::int64_t epoch, std::int64_t index);

}  // namespace cohort::data
