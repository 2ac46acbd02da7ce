// How a dataset divides over ranks and into batches: the arithmetic of torch's
// DistributedSampler and of the DataLoader, without either (no LibTorch, no file access), so that
// `cohort data inspect --batch-size` checks a training plan as training itself will.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace cohort::data {

// Samples each rank sees per epoch: torch's num_samples (drop_last cuts the uneven tail,
// otherwise the list is padded to a multiple of the world).
std::int64_t samples_per_rank(std::int64_t size, int world, bool drop_last);

struct BatchPlan {
  std::int64_t samples_per_rank = 0;
  std::int64_t batches_per_epoch = 0;
};

// Throws ConfigError naming path when a batch is larger than one rank's share.
BatchPlan plan_batches(const std::string& path, std::int64_t size, std::int64_t batch_size,
                       int world, bool drop_last, bool drop_last_batch);
// The "plan" of `cohort data inspect --batch-size --json`: ranks, batch_size and the plan.
nlohmann::json to_json(const BatchPlan& plan, int ranks, std::int64_t batch_size);

}  // namespace cohort::data
