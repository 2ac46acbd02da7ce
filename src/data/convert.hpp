// Turning the rows a BatchReader read into a Batch: gather in the order asked, convert to
// float32 (or int64 tokens), normalize and augment. Internal to the data module.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "cohort/data/reader.hpp"

namespace cohort::data {

// What one shard contributes to a batch: its sorted unique rows and the buffers read for them.
struct ShardRead {
  std::vector<std::int64_t> rows;
  std::vector<unsigned char> inputs;        // rows x sample, as stored (tokens: int64)
  std::vector<unsigned char> targets;       // rows x target, as stored
  std::vector<std::int64_t> token_offsets;  // token datasets: where each row starts in `inputs`
};

// where[i] = (shard, row) of the i-th requested sample.
Batch assemble(const DatasetInfo& info, const ReaderOptions& options,
               const std::vector<ShardRead>& reads,
               const std::vector<std::pair<std::size_t, std::int64_t>>& where, std::int64_t epoch,
               const std::vector<std::int64_t>& indices);

// The augmentation of one sample [C, H, W] in place; `scratch` is resized as needed.
void augment_image(float* sample, std::int64_t channels, std::int64_t height, std::int64_t width,
                   const Augmentation& augment, std::uint64_t seed, std::int64_t epoch,
                   std::int64_t index, std::vector<float>& scratch);

}  // namespace cohort::data
