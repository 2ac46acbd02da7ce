// Turning the rows a BatchReader read into a Batch: gather in the order asked, convert to
// float32 (or int64 tokens), normalize and augment. Internal to the data module.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "cohort/data/reader.hpp"
#include "data/buffer_pool.hpp"

namespace cohort::data {

// What one shard contributes to a batch: its sorted unique rows and the buffers read for them.
// The buffers are uninitialized byte tensors, or the batch's own tensors on the direct path.
struct ShardRead {
  std::vector<std::int64_t> rows;
  at::Tensor inputs;                        // rows x sample, as stored (tokens: int64)
  at::Tensor targets;                       // rows x target, as stored
  std::vector<std::int64_t> token_offsets;  // token datasets: where each row starts in `inputs`
};

// Whether a batch can be read straight into its output tensors: its values need no conversion
// (raw, or float32 with nothing to normalize or augment) and the caller will check that the
// indices are increasing within one shard, so that read order is batch order.
bool direct_eligible(const DatasetInfo& info, const ReaderOptions& options);
// The batch's tensors, [batch, sample...] and [batch, target...], in the stored dtypes.
Batch allocate_stored(const DatasetInfo& info, const ReaderOptions& options, std::int64_t batch,
                      BufferPool& pool);

// where[i] = (shard, row) of the i-th requested sample.
Batch assemble(const DatasetInfo& info, const ReaderOptions& options, BufferPool& pool,
               const std::vector<ShardRead>& reads,
               const std::vector<std::pair<std::size_t, std::int64_t>>& where, std::int64_t epoch,
               const std::vector<std::int64_t>& indices);

// The augmentation of one sample [C, H, W] in place; `scratch` is resized as needed.
void augment_image(float* sample, std::int64_t channels, std::int64_t height, std::int64_t width,
                   const Augmentation& augment, std::uint64_t seed, std::int64_t epoch,
                   std::int64_t index, std::vector<float>& scratch);

}  // namespace cohort::data
