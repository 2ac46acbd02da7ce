// The on-disk dataset format (docs/formats/dataset.md) and its validated description.
//
// A dataset is one HDF5 file or a directory of HDF5 shards (*.h5, in name order). Sample datasets
// hold /inputs [N, ...] and /targets [N] or [N, ...]; token datasets hold /tokens [T] and a
// sequence length, sample i being tokens[i*L .. i*L+L] (inputs) and the same shifted by one
// (targets). Field datasets (format version 2) hold named fields: /inputs is a group whose
// members are fixed-shape datasets [N, ...] or ragged groups (values [V, ...] and offsets
// [N + 1]), and /targets a dataset or such a group. describe() opens every shard, checks it
// against the format and against the other shards, and says what is wrong in one line naming the
// file and the dataset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cohort/io/dtype.hpp"

namespace cohort::data {

inline constexpr int kFormatVersion = 2;  // 2: named and ragged fields (1: still read as is)
inline constexpr std::size_t kMaxFields = 64;
inline constexpr std::size_t kDefaultChunkBytes = 1u << 20;

// Element types and shape text are the io module's (checkpoints store the same types).
using io::DType;
using io::dtype_size;
using io::parse_dtype;
using io::shape_numel;
using io::shape_text;
using io::to_string;

enum class DatasetKind { kSamples, kTokens, kFields };
std::string to_string(DatasetKind kind);

// One named field of a field dataset: a fixed-shape dataset <group>/<name> [N, ...], or a ragged
// group <group>/<name> holding values [V, ...] and offsets [N + 1] (int64, non-decreasing, at
// most V): sample i is values[offsets[i] : offsets[i + 1]].
struct FieldInfo {
  std::string name;
  bool target = false;  // under /targets (else /inputs)
  bool ragged = false;
  std::vector<std::int64_t> shape;  // fixed: one sample's; ragged: one value's ([] for scalars)
  DType dtype = DType::kFloat32;
  std::vector<double> mean, stddev;  // float and uint8 fields: normalization (channel: shape[0])
  std::int64_t vocab_size = 0;       // integer fields: ids lie in 0..vocab_size-1 (0: unchecked)
  std::int64_t max_length = 0;       // ragged: the longest sample over all shards
  // "/inputs/tokens"; a single-dataset /targets is the field "targets" at "/targets".
  std::string location;
  bool integer() const;
};

struct ShardInfo {
  std::string path;
  std::int64_t samples = 0;         // N (token datasets: usable sequences)
  std::int64_t tokens = 0;          // T (token datasets only)
  std::vector<std::int64_t> chunk;  // chunk shape of /inputs (or /tokens); empty: contiguous
  // Field datasets: per field (DatasetInfo::fields order), the validated offsets of a ragged
  // one (N + 1 values), null for a fixed one. Shared: readers take them from describe().
  std::vector<std::shared_ptr<const std::vector<std::int64_t>>> offsets;
};

struct DatasetInfo {
  std::string path;  // the file or the directory
  DatasetKind kind = DatasetKind::kSamples;
  int format_version = kFormatVersion;
  std::vector<std::int64_t> sample_shape;  // one input sample (tokens: [seq_len])
  DType input_dtype = DType::kFloat32;
  std::vector<std::int64_t> target_shape;  // one target ([] for a scalar label)
  DType target_dtype = DType::kInt64;
  std::int64_t num_samples = 0;  // over all shards
  std::int64_t classes = 0;      // 0: not a classification set
  std::int64_t seq_len = 0;      // token datasets
  std::int64_t vocab_size = 0;   // token datasets
  std::vector<double> mean;      // normalization, in stored units: 1 value or one per channel
  std::vector<double> stddev;
  std::string split;   // "train", "val", "test", ... or empty
  std::string source;  // where the data came from (import) or how it was made (synthetic)
  std::string source_checksum;
  std::string tokenizer, tokenizer_checksum;  // token sets made with a SentencePiece model
  std::string class_names;                    // JSON array, label order (or empty)
  // Field datasets: inputs then targets, each in name order. sample_shape/input_dtype then
  // describe the first input field (ragged: [max_length, value...]), target_shape/target_dtype
  // the target named `target` (the first, unless select_target() chose another).
  std::vector<FieldInfo> fields;
  std::string target;
  std::vector<ShardInfo> shards;

  std::int64_t sample_numel() const;
  std::size_t sample_bytes() const;  // one input sample as stored
};

// Opens and validates a dataset. Throws IoError (exit code 3) naming the file and the dataset.
DatasetInfo describe(const std::string& path);

// Makes target field `name` the one target_shape/target_dtype describe and a batch's `targets`
// holds. ConfigError naming the dataset and its targets when it has no such target (or is not a
// field dataset).
void select_target(DatasetInfo& info, const std::string& name);

// The sample lengths of ragged field `field` (an index into info.fields), over all shards in
// global sample order.
std::vector<std::int64_t> sample_lengths(const DatasetInfo& info, std::size_t field);

// A validation set must be tokenized as the training set is (the same SentencePiece model, or
// both byte-level): otherwise IoError naming both files and models.
void check_same_tokenizer(const DatasetInfo& train, const DatasetInfo& val);

// The shard files of a dataset path: the file itself, or the directory's *.h5 in name order.
std::vector<std::string> shard_paths(const std::string& path);

}  // namespace cohort::data
