// The one conversion of stored values to what the model receives (docs/models.md, "What
// forward() receives"), shared by the sample reader and the field reader.
#pragma once

#include <c10/util/Half.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cohort/io/dtype.hpp"

namespace cohort::data {

// out = (in - offset) * scale. The mean is subtracted first, as torchvision's Normalize does:
// a feature far from zero with a small spread (1e4 +- 0.05) keeps its digits, where the fused
// in * scale + shift of two large float32 terms would lose them.
template <typename In>
void offset_scale(const In* in, std::int64_t count, float offset, float scale, float* out) {
  for (std::int64_t e = 0; e < count; ++e) out[e] = (static_cast<float>(in[e]) - offset) * scale;
}

// What channel c's values become: (x - mean[c]) / std[c] with the statistics (one value or one
// per channel; a missing one is 0 or 1); without them, uint8 scaled to [0, 1] and the rest as
// stored; everything as stored when normalization is off.
struct ChannelNorm {
  float offset = 0.0f, scale = 1.0f;
};
inline ChannelNorm channel_norm(const std::vector<double>& mean, const std::vector<double>& stddev,
                                DType dtype, bool normalize, std::size_t c) {
  const auto pick = [c](const std::vector<double>& v, double fallback) {
    return v.empty() ? fallback : v.size() == 1 ? v[0] : v[c];
  };
  if (!normalize) return {};
  if (!mean.empty() || !stddev.empty())
    return {static_cast<float>(pick(mean, 0.0)), static_cast<float>(1.0 / pick(stddev, 1.0))};
  if (dtype == DType::kUInt8) return {0.0f, 1.0f / 255.0f};
  return {};
}

// count stored values of `dtype` (uint8, float16 or float32) from `in`, converted into `out`.
inline void convert_span(const unsigned char* in, DType dtype, std::int64_t first,
                         std::int64_t count, ChannelNorm norm, float* out) {
  switch (dtype) {
    case DType::kUInt8:
      offset_scale(in + first, count, norm.offset, norm.scale, out + first);
      break;
    case DType::kFloat16:
      offset_scale(reinterpret_cast<const c10::Half*>(in) + first, count, norm.offset, norm.scale,
                   out + first);
      break;
    default:
      offset_scale(reinterpret_cast<const float*>(in) + first, count, norm.offset, norm.scale,
                   out + first);
  }
}

}  // namespace cohort::data
