// DistributedSampler: which sample indices each rank sees in an epoch, in exactly the order of
// torch.utils.data.DistributedSampler (PyTorch 1.13):
//  - shuffle: torch.randperm(size) from a CPU generator seeded with seed + epoch; else 0..size-1;
//  - drop_last off: the list is padded to a multiple of the world size by repeating its head
//    (several times over when the world is larger than the dataset); drop_last on: the tail that
//    does not divide evenly is cut;
//  - rank r takes every world-th index starting at r.
// The same seed, epoch, size and world give every rank the same permutation, so the ranks'
// slices are disjoint (apart from the padding) and together cover the dataset.
#pragma once

#include <cstdint>
#include <vector>

namespace cohort::data {

struct SamplerOptions {
  std::int64_t size = 0;  // samples in the dataset
  int rank = 0;
  int world = 1;
  std::uint64_t seed = 0;
  bool shuffle = true;
  bool drop_last = false;
};

class DistributedSampler {
 public:
  explicit DistributedSampler(SamplerOptions options);

  // This rank's indices for the epoch, num_samples() of them.
  std::vector<std::int64_t> indices(std::int64_t epoch) const;
  std::int64_t num_samples() const { return num_samples_; }
  std::int64_t total_size() const { return num_samples_ * options_.world; }
  const SamplerOptions& options() const { return options_; }

 private:
  SamplerOptions options_;
  std::int64_t num_samples_ = 0;
};

}  // namespace cohort::data
