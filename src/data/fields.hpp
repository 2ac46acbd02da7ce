// The field layout (format version 2, docs/formats/dataset.md "Field datasets"): describing a
// shard's named fields and checking that every shard has the same ones. Internal to the data
// module; describe() calls it when /inputs is a group.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/data/dataset.hpp"
#include "io/h5/hid.hpp"

namespace cohort::data {

// Fills info.fields (inputs, then targets), the summary fields of info (sample_shape, ...), and
// shard.samples and shard.offsets. IoError naming the file and the field otherwise.
void describe_fields(hid_t file, const std::string& path, DatasetInfo& info, ShardInfo& shard);

// Normalization attributes of a sample dataset or a field (`where` names it): one value each or
// one per channel, finite, std above 0. IoError otherwise.
void check_statistics(const std::vector<double>& mean, const std::vector<double>& stddev,
                      std::int64_t channels, const std::string& where);

// A ragged field's offsets against its `values` values (`where` names the offsets): at least
// two, the first 0 or more, never decreasing, the last at most `values`, so that every sample
// lies inside the values. Returns the longest sample. IoError otherwise.
std::int64_t check_ragged_offsets(const std::vector<std::int64_t>& offsets, std::int64_t values,
                                  const std::string& where);

// The same fields (names, kinds, shapes, dtypes, vocabularies) in `other` as in `first`.
void check_same_fields(const DatasetInfo& first, const DatasetInfo& other, const std::string& path);

}  // namespace cohort::data
