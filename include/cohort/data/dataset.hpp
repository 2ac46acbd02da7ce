// The on-disk dataset format (docs/formats/dataset.md) and its validated description.
//
// A dataset is one HDF5 file or a directory of HDF5 shards (*.h5, in name order). Sample datasets
// hold /inputs [N, ...] and /targets [N] or [N, ...]; token datasets hold /tokens [T] and a
// sequence length, sample i being tokens[i*L .. i*L+L] (inputs) and the same shifted by one
// (targets). describe() opens every shard, checks it against the format and against the other
// shards, and says what is wrong in one line naming the file and the dataset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cohort/io/dtype.hpp"

namespace cohort::data {

inline constexpr int kFormatVersion = 1;
inline constexpr std::size_t kDefaultChunkBytes = 1u << 20;

// Element types and shape text are the io module's (checkpoints store the same types).
using io::DType;
using io::dtype_size;
using io::parse_dtype;
using io::shape_text;
using io::to_string;

enum class DatasetKind { kSamples, kTokens };
std::string to_string(DatasetKind kind);

struct ShardInfo {
  std::string path;
  std::int64_t samples = 0;         // N (token datasets: usable sequences)
  std::int64_t tokens = 0;          // T (token datasets only)
  std::vector<std::int64_t> chunk;  // chunk shape of /inputs (or /tokens); empty: contiguous
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
  std::vector<ShardInfo> shards;

  std::int64_t sample_numel() const;
  std::size_t sample_bytes() const;  // one input sample as stored
};

// Opens and validates a dataset. Throws IoError (exit code 3) naming the file and the dataset.
DatasetInfo describe(const std::string& path);

// A validation set must be tokenized as the training set is (the same SentencePiece model, or
// both byte-level): otherwise IoError naming both files and models.
void check_same_tokenizer(const DatasetInfo& train, const DatasetInfo& val);

// The shard files of a dataset path: the file itself, or the directory's *.h5 in name order.
std::vector<std::string> shard_paths(const std::string& path);

}  // namespace cohort::data
