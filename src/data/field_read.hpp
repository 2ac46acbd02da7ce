// Reading a batch of a field dataset: every field's rows (fixed) or values (ragged) for the
// batch's samples, shard by shard, then one tensor per field in the order asked. Ragged fields
// are padded to the longest sample in the batch and followed by their mask. Internal to the data
// module; BatchReader owns the files and supplies the reads.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "cohort/data/reader.hpp"
#include "data/buffer_pool.hpp"
#include "data/convert.hpp"
#include "io/h5/file.hpp"

namespace cohort::data {

// Reads `runs` (along the first dimension of field `field`'s dataset, or of its values when
// ragged) of shard `shard`, back to back into `out`, as stored. Called for every (field, shard)
// in that order, with no runs where a shard has nothing to read (collective MPI-IO needs every
// rank in every read).
using FieldRunReader = std::function<void(std::size_t field, std::size_t shard,
                                          const std::vector<io::h5::Run>& runs, void* out)>;

// reads[s].rows: shard s's sorted unique rows; where[i]: (shard, row) of the i-th sample asked.
Batch read_field_batch(const DatasetInfo& info, const ReaderOptions& options, BufferPool& pool,
                       const std::vector<ShardRead>& reads,
                       const std::vector<std::pair<std::size_t, std::int64_t>>& where,
                       const FieldRunReader& read, ReadStats& stats);

}  // namespace cohort::data
