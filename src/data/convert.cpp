#include "data/convert.hpp"

#include <ATen/Context.h>
#include <ATen/ops/empty.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstring>

#include "cohort/error.hpp"
#include "common/splitmix.hpp"
#include "data/normalize.hpp"

namespace cohort::data {
namespace {

at::TensorOptions host_options(at::ScalarType type, const ReaderOptions& options) {
  auto result = at::TensorOptions().dtype(type);
  // Page-locked host memory lets a CUDA copy run asynchronously; only where CUDA is present.
  if (options.pin_memory && at::globalContext().hasCUDA()) result = result.pinned_memory(true);
  return result;
}

std::vector<std::int64_t> batch_shape(std::int64_t batch, const std::vector<std::int64_t>& item) {
  std::vector<std::int64_t> shape{batch};
  shape.insert(shape.end(), item.begin(), item.end());
  return shape;
}

// Per channel (the sample's first dimension): converts and normalizes in one pass
// (data/normalize.hpp).
void convert_sample(const unsigned char* in, const DatasetInfo& info, bool normalize, float* out) {
  const std::int64_t numel = info.sample_numel();
  const bool stats = normalize && (!info.mean.empty() || !info.stddev.empty());
  const std::size_t channels = stats ? std::max(info.mean.size(), info.stddev.size()) : 1;
  const std::int64_t per_channel = numel / static_cast<std::int64_t>(channels);
  for (std::size_t c = 0; c < channels; ++c) {
    const auto norm = channel_norm(info.mean, info.stddev, info.input_dtype, normalize, c);
    convert_span(in, info.input_dtype, static_cast<std::int64_t>(c) * per_channel, per_channel,
                 norm, out);
  }
}

std::size_t row_of(const ShardRead& read, std::int64_t row) {
  return static_cast<std::size_t>(std::lower_bound(read.rows.begin(), read.rows.end(), row) -
                                  read.rows.begin());
}

Batch assemble_tokens(const DatasetInfo& info, const ReaderOptions& options, BufferPool& pool,
                      const std::vector<ShardRead>& reads,
                      const std::vector<std::pair<std::size_t, std::int64_t>>& where) {
  const auto batch = static_cast<std::int64_t>(where.size());
  const std::int64_t length = info.seq_len;
  Batch out;
  out.inputs = pool.empty({batch, length}, host_options(at::kLong, options));
  out.targets = pool.empty({batch, length}, host_options(at::kLong, options));
  auto* inputs = out.inputs.data_ptr<std::int64_t>();
  auto* targets = out.targets.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < batch; ++i) {
    const auto& read = reads[where[static_cast<std::size_t>(i)].first];
    const auto k = row_of(read, where[static_cast<std::size_t>(i)].second);
    const auto* tokens = read.inputs.data_ptr<std::int64_t>() + read.token_offsets[k];
    std::memcpy(inputs + i * length, tokens, static_cast<std::size_t>(length) * 8);
    std::memcpy(targets + i * length, tokens + 1, static_cast<std::size_t>(length) * 8);
  }
  return out;
}

at::ScalarType scalar_type(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
      return at::kByte;
    case DType::kFloat16:
      return at::kHalf;
    case DType::kInt64:
      return at::kLong;
    case DType::kFloat32:
      return at::kFloat;
    default:
      COHORT_THROW(IoError, "no tensor type for dtype ", to_string(dtype));
  }
}

const unsigned char* bytes(const at::Tensor& tensor) {
  return static_cast<const unsigned char*>(tensor.data_ptr());
}

Batch assemble_raw(const DatasetInfo& info, const ReaderOptions& options, BufferPool& pool,
                   const std::vector<ShardRead>& reads,
                   const std::vector<std::pair<std::size_t, std::int64_t>>& where,
                   std::int64_t epoch) {
  const auto batch = static_cast<std::int64_t>(where.size());
  std::size_t target_row = dtype_size(info.target_dtype);
  for (auto d : info.target_shape) target_row *= static_cast<std::size_t>(d);
  const std::size_t input_row = info.sample_bytes();
  Batch out = allocate_stored(info, options, batch, pool);
  out.epoch = epoch;
  auto* inputs = static_cast<unsigned char*>(out.inputs.data_ptr());
  auto* targets = static_cast<unsigned char*>(out.targets.data_ptr());
  for (std::size_t i = 0; i < where.size(); ++i) {
    const auto& read = reads[where[i].first];
    const auto k = row_of(read, where[i].second);
    std::memcpy(inputs + i * input_row, bytes(read.inputs) + k * input_row, input_row);
    std::memcpy(targets + i * target_row, bytes(read.targets) + k * target_row, target_row);
  }
  return out;
}

}  // namespace

bool direct_eligible(const DatasetInfo& info, const ReaderOptions& options) {
  if (info.kind != DatasetKind::kSamples) return false;
  if (options.raw) return true;
  const bool augmenting = options.augment.crop_padding > 0 || options.augment.horizontal_flip;
  const bool normalizing = options.normalize && (!info.mean.empty() || !info.stddev.empty());
  return info.input_dtype == DType::kFloat32 && !normalizing && !augmenting;
}

Batch allocate_stored(const DatasetInfo& info, const ReaderOptions& options, std::int64_t batch,
                      BufferPool& pool) {
  Batch out;
  out.inputs = pool.empty(batch_shape(batch, info.sample_shape),
                          host_options(scalar_type(info.input_dtype), options));
  out.targets = pool.empty(batch_shape(batch, info.target_shape),
                           host_options(scalar_type(info.target_dtype), options));
  return out;
}

void augment_image(float* sample, std::int64_t channels, std::int64_t height, std::int64_t width,
                   const Augmentation& augment, std::uint64_t seed, std::int64_t epoch,
                   std::int64_t index, std::vector<float>& scratch) {
  std::uint64_t state =
      splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(epoch) ^
                                   splitmix64(static_cast<std::uint64_t>(index))));
  const auto next = [&state] { return state = splitmix64(state); };
  const std::int64_t pad = augment.crop_padding;
  const std::int64_t dy = pad > 0 ? static_cast<std::int64_t>(next() % (2 * pad + 1)) - pad : 0;
  const std::int64_t dx = pad > 0 ? static_cast<std::int64_t>(next() % (2 * pad + 1)) - pad : 0;
  const bool flip = augment.horizontal_flip && (next() & 1u) != 0;
  if (dx == 0 && dy == 0 && !flip) return;
  const std::int64_t plane = height * width;
  scratch.assign(sample, sample + channels * plane);
  for (std::int64_t c = 0; c < channels; ++c) {
    for (std::int64_t y = 0; y < height; ++y) {
      for (std::int64_t x = 0; x < width; ++x) {
        const std::int64_t sy = y + dy;
        const std::int64_t sx = (flip ? width - 1 - x : x) + dx;
        const bool inside = sy >= 0 && sy < height && sx >= 0 && sx < width;
        sample[c * plane + y * width + x] = inside ? scratch[c * plane + sy * width + sx] : 0.0f;
      }
    }
  }
}

Batch assemble(const DatasetInfo& info, const ReaderOptions& options, BufferPool& pool,
               const std::vector<ShardRead>& reads,
               const std::vector<std::pair<std::size_t, std::int64_t>>& where, std::int64_t epoch,
               const std::vector<std::int64_t>& indices) {
  if (info.kind == DatasetKind::kTokens) {
    Batch out = assemble_tokens(info, options, pool, reads, where);
    out.epoch = epoch;
    return out;
  }
  const auto& shape = info.sample_shape;
  const bool augmenting = options.augment.crop_padding > 0 || options.augment.horizontal_flip;
  COHORT_CHECK(!augmenting || shape.size() == 2 || shape.size() == 3, UsageError, info.path,
               ": crop/flip augmentation needs image samples [C, H, W] or [H, W]");
  const auto batch = static_cast<std::int64_t>(where.size());
  if (options.raw) return assemble_raw(info, options, pool, reads, where, epoch);
  const std::int64_t numel = info.sample_numel();
  std::size_t target_row = dtype_size(info.target_dtype);
  for (auto d : info.target_shape) target_row *= static_cast<std::size_t>(d);
  Batch out;
  out.epoch = epoch;
  out.inputs = pool.empty(batch_shape(batch, shape), host_options(at::kFloat, options));
  out.targets = pool.empty(
      batch_shape(batch, info.target_shape),
      host_options(info.target_dtype == DType::kInt64 ? at::kLong : at::kFloat, options));
  auto* inputs = out.inputs.data_ptr<float>();
  auto* targets = static_cast<unsigned char*>(out.targets.data_ptr());
  std::vector<float> scratch;
  for (std::int64_t i = 0; i < batch; ++i) {
    const auto& read = reads[where[static_cast<std::size_t>(i)].first];
    const auto k = row_of(read, where[static_cast<std::size_t>(i)].second);
    float* sample = inputs + i * numel;
    convert_sample(bytes(read.inputs) + k * info.sample_bytes(), info, options.normalize, sample);
    std::memcpy(targets + static_cast<std::size_t>(i) * target_row,
                bytes(read.targets) + k * target_row, target_row);
    if (augmenting) {
      const bool planar = shape.size() == 3;
      augment_image(sample, planar ? shape[0] : 1, shape[planar ? 1 : 0], shape[planar ? 2 : 1],
                    options.augment, options.seed, epoch, indices[static_cast<std::size_t>(i)],
                    scratch);
    }
  }
  return out;
}

}  // namespace cohort::data
