#include "cohort/ddp/bucket_plan.hpp"

#include <algorithm>
#include <map>

namespace cohort::ddp {

std::vector<BucketSpec> plan_buckets(const std::vector<ParamInfo>& params, std::size_t bucket_bytes,
                                     std::size_t first_bucket_bytes) {
  std::vector<BucketSpec> closed;
  std::map<c10::ScalarType, BucketSpec> open;  // one open bucket per dtype
  auto cap = [&] { return closed.empty() ? first_bucket_bytes : bucket_bytes; };
  for (std::size_t k = params.size(); k-- > 0;) {
    const ParamInfo& p = params[k];
    if (!p.requires_grad) continue;
    if (p.alone) {
      closed.push_back(BucketSpec{p.dtype, {k}, {0}, p.numel});
      continue;
    }
    const std::size_t element = c10::elementSize(p.dtype);
    BucketSpec& bucket = open[p.dtype];
    const std::size_t bytes = static_cast<std::size_t>(bucket.numel + p.numel) * element;
    const bool other_unit = !bucket.params.empty() && params[bucket.params.back()].unit != p.unit;
    if (!bucket.params.empty() && (bytes > cap() || other_unit)) {
      closed.push_back(std::move(bucket));
      bucket = BucketSpec{};
    }
    bucket.dtype = p.dtype;
    bucket.params.push_back(k);
    bucket.offsets.push_back(bucket.numel);
    bucket.numel += p.numel;
  }
  // Remaining open buckets, in the order of their first parameter (deterministic on all ranks).
  std::vector<BucketSpec> rest;
  for (auto& entry : open) {
    if (!entry.second.params.empty()) rest.push_back(std::move(entry.second));
  }
  std::sort(rest.begin(), rest.end(), [](const BucketSpec& a, const BucketSpec& b) {
    return a.params.front() > b.params.front();
  });
  for (auto& bucket : rest) closed.push_back(std::move(bucket));
  return closed;
}

}  // namespace cohort::ddp
