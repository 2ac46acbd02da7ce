// The library behind `cohort data ...`: make synthetic datasets, import real ones, inspect, split
// and stage them. Every writer goes through DatasetWriter (atomic: a failed tool leaves no file).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cohort/data/dataset.hpp"

namespace cohort::data {

// ---- make-synthetic -------------------------------------------------------------------------
struct SyntheticOptions {
  std::string kind = "classification";  // classification | images | tokens
  std::int64_t samples = 10000;         // classification, images
  std::int64_t features = 32;           // classification
  std::int64_t classes = 10;            // classification, images
  std::int64_t image_size = 28;         // images: [channels, size, size] uint8
  std::int64_t channels = 1;
  std::int64_t tokens = 1 << 20;  // tokens: stream length
  std::int64_t vocab = 256;
  std::int64_t seq_len = 128;
  std::uint64_t seed = 0;
  int shards = 1;  // > 1: `out` is a directory of shards
  std::string split = "train";
  std::size_t chunk_bytes = kDefaultChunkBytes;
};
// Classification: Gaussian clusters around per-class centres (learnable, not separable by eye).
// Images: per-class templates of blobs plus noise. Tokens: a sparse Markov chain.
void make_synthetic(const std::string& out, const SyntheticOptions& options);

// ---- import ---------------------------------------------------------------------------------
struct ImportOptions {
  std::string format;               // fashion-mnist | digits | diabetes | csv | npy | text
  std::vector<std::string> inputs;  // source files (fashion-mnist: its directory)
  std::string split;                // fashion-mnist: train | test; others: the split attribute
  int label_column = -1;            // csv: -1 = last
  bool float_targets = false;       // csv, npy: float32 targets even for whole-number labels
  std::vector<std::int64_t> shape;  // csv: sample shape (default [columns - 1])
  std::int64_t seq_len = 128;       // text
  std::string tokenizer;  // text: a SentencePiece model: import_text_tokens (data/tokenizer.hpp)
  std::size_t chunk_bytes = kDefaultChunkBytes;
  // A gzip source may inflate to this many times its file's size (at least 256 MiB): a bound
  // against decompression bombs that real data (2-10 times) never reaches; raise it for sources
  // that compress better (--max-inflate-ratio).
  std::uint64_t max_inflate_ratio = 100;
};
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr const char* kDigitsCsv =
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
inline constexpr const char* kDiabetesData =
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/diabetes_data_raw.csv.gz";
inline constexpr const char* kDiabetesTarget =
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/diabetes_target.csv.gz";
// Returns the description of the written file.
DatasetInfo import_dataset(const std::string& out, const ImportOptions& options);

// ---- inspect --------------------------------------------------------------------------------
struct FeatureStats {
  double mean = 0, stddev = 0, min = 0, max = 0;
};
// One field of a field dataset: its values as stored, and (ragged) its sample lengths.
struct FieldInspection {
  FieldInfo field;
  FeatureStats values;
  FeatureStats lengths;  // ragged: values per sample
  std::int64_t total_values = 0;
};
struct Inspection {
  DatasetInfo info;
  std::vector<FieldInspection> fields;  // field datasets: every field (the rest stays empty)
  FeatureStats overall;                 // all input values, as stored
  std::vector<FeatureStats> channels;   // per first sample dimension
  std::vector<FeatureStats> features;   // per input element (first max_features)
  std::map<std::int64_t, std::int64_t> class_histogram;  // integer scalar targets / tokens
  std::int64_t features_total = 0;
  double seconds = 0;
};
// Reads every sample (its stored values, shard by shard, in order; no LibTorch).
Inspection inspect(const std::string& path, std::int64_t max_features = 16);
nlohmann::json to_json(const Inspection& inspection);
std::string to_text(const Inspection& inspection);

// ---- split ----------------------------------------------------------------------------------
struct SplitResult {
  std::int64_t train = 0, val = 0;
};
// Sample datasets: a seeded random permutation, the first (1 - fraction) to train_out (split
// "train"), the rest to val_out (split "val"), each in ascending original order. Token datasets:
// the last fraction of the stream (contiguous, so sequences stay whole).
SplitResult split_dataset(const std::string& in, const std::string& train_out,
                          const std::string& val_out, double val_fraction, std::uint64_t seed);

// ---- select ---------------------------------------------------------------------------------
struct SelectResult {
  std::int64_t samples = 0;
  std::vector<std::int64_t> per_class;  // in the order of `classes`
};
// Classification datasets: the samples whose label is in `classes`, in their original order,
// relabelled to their index in `classes` (class names follow); per_class > 0 keeps the first
// per_class of each. UsageError for another kind of dataset, a class out of range or listed twice.
SelectResult select_classes(const std::string& in, const std::string& out,
                            const std::vector<std::int64_t>& classes, std::int64_t per_class);

// ---- stage ----------------------------------------------------------------------------------
struct StagedFile {
  std::string source, destination, checksum;
  std::int64_t bytes = 0;
};
struct StageResult {
  std::string method;       // "sbcast" or "copy"
  std::string destination;  // the staged dataset path (file or directory)
  std::vector<StagedFile> files;
  std::vector<std::string> nodes;  // where it was verified
  double seconds = 0;
};
// Under a Slurm allocation (SLURM_JOB_ID set): sbcast every file to dest_dir on every node of
// the allocation, then verify size and checksum on every node (`cohort data checksum` via srun).
// Elsewhere: a copy (temp file + rename) verified the same way. Throws IoError on a mismatch.
StageResult stage(const std::string& source, const std::string& dest_dir,
                  const std::string& cohort_exe);
nlohmann::json to_json(const StageResult& result);

}  // namespace cohort::data
