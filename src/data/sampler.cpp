#include "cohort/data/sampler.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/randperm.h>

#include "cohort/data/batch_plan.hpp"
#include "cohort/error.hpp"

namespace cohort::data {

DistributedSampler::DistributedSampler(SamplerOptions options) : options_(options) {
  COHORT_CHECK(options_.world >= 1 && options_.rank >= 0 && options_.rank < options_.world,
               UsageError, "sampler: rank ", options_.rank, " outside world ", options_.world);
  num_samples_ = samples_per_rank(options_.size, options_.world, options_.drop_last);
}

std::vector<std::int64_t> DistributedSampler::indices(std::int64_t epoch) const {
  const std::int64_t size = options_.size;
  std::vector<std::int64_t> order(static_cast<std::size_t>(size));
  if (options_.shuffle) {
    // torch.Generator().manual_seed(seed + epoch); torch.randperm(n, generator=g)
    auto generator =
        at::detail::createCPUGenerator(options_.seed + static_cast<std::uint64_t>(epoch));
    const at::Tensor perm = at::randperm(size, generator, at::TensorOptions().dtype(at::kLong));
    const auto* data = perm.data_ptr<std::int64_t>();
    order.assign(data, data + size);
  } else {
    for (std::int64_t i = 0; i < size; ++i) order[static_cast<std::size_t>(i)] = i;
  }
  const std::int64_t total = total_size();
  if (!options_.drop_last) {
    // indices += (indices * ceil(pad / len))[:pad]: repeat the head as often as needed
    const std::int64_t padding = total - size;
    for (std::int64_t i = 0; i < padding && size > 0; ++i) {
      order.push_back(order[static_cast<std::size_t>(i % size)]);
    }
  } else {
    order.resize(static_cast<std::size_t>(total));
  }
  std::vector<std::int64_t> mine;
  mine.reserve(static_cast<std::size_t>(num_samples_));
  for (std::int64_t i = options_.rank; i < total; i += options_.world) {
    mine.push_back(order[static_cast<std::size_t>(i)]);
  }
  return mine;
}

}  // namespace cohort::data
