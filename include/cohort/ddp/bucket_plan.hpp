// BucketPlan: which parameters share a gradient bucket. Parameters are taken in reverse
// registration order (roughly the order backward produces their gradients), frozen ones are
// skipped, and each bucket holds one dtype. A bucket closes when the next parameter would take it
// past its byte cap: the first bucket has a smaller cap so that communication starts early. A
// parameter marked `alone` gets a bucket of its own, at its place in the order (ZeRO cuts such a
// bucket the same way on every group that holds the parameter: the tied copies of two pipeline
// stages). Under ZeRO 3 each parameter names its unit (a block, gathered and freed as one): a
// bucket never holds two units' parameters.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cohort::ddp {

struct ParamInfo {
  std::int64_t numel = 0;
  c10::ScalarType dtype = c10::ScalarType::Float;
  bool requires_grad = true;
  bool alone = false;
  int unit = -1;  // ZeRO 3: the block it belongs to; -1 none (used by several, or no units)
};

struct BucketSpec {
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::vector<std::size_t> params;    // indices into the registration-order parameter list
  std::vector<std::int64_t> offsets;  // element offset of each parameter in the flat buffer
  std::int64_t numel = 0;
};

std::vector<BucketSpec> plan_buckets(const std::vector<ParamInfo>& params, std::size_t bucket_bytes,
                                     std::size_t first_bucket_bytes);

}  // namespace cohort::ddp
