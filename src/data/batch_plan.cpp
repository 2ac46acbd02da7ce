#include "cohort/data/batch_plan.hpp"

#include <nlohmann/json.hpp>

#include "cohort/error.hpp"

namespace cohort::data {

std::int64_t samples_per_rank(std::int64_t size, int world, bool drop_last) {
  COHORT_CHECK(world >= 1, UsageError, "sampler: world ", world, " is not positive");
  COHORT_CHECK(size >= 0, UsageError, "sampler: negative dataset size");
  const std::int64_t w = world;
  if (drop_last && size % w != 0) {
    // torch: math.ceil((len - num_replicas) / num_replicas)
    return size < w ? 0 : (size - w + w - 1) / w;
  }
  return (size + w - 1) / w;
}

BatchPlan plan_batches(const std::string& path, std::int64_t size, std::int64_t batch_size,
                       int world, bool drop_last, bool drop_last_batch) {
  COHORT_CHECK(batch_size >= 1, ConfigError, "data: batch size must be >= 1, not ", batch_size);
  BatchPlan plan;
  plan.samples_per_rank = samples_per_rank(size, world, drop_last);
  COHORT_CHECK(batch_size <= plan.samples_per_rank, ConfigError, path, ": batch size ", batch_size,
               " is larger than this rank's shard of ", plan.samples_per_rank, " samples (", size,
               " samples over ", world, " ranks)");
  plan.batches_per_epoch = drop_last_batch ? plan.samples_per_rank / batch_size
                                           : (plan.samples_per_rank + batch_size - 1) / batch_size;
  return plan;
}

nlohmann::json to_json(const BatchPlan& plan, int ranks, std::int64_t batch_size) {
  return {{"ranks", ranks},
          {"batch_size", batch_size},
          {"samples_per_rank", plan.samples_per_rank},
          {"batches_per_epoch", plan.batches_per_epoch}};
}

}  // namespace cohort::data
