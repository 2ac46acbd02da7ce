// DatasetWriter: writes one dataset file in the Cohort format, atomically.
//
// Protocol: construct with the path and a spec (shapes, dtypes, counts known up front), write
// rows in any order and block size with write_samples / write_tokens, then commit(). Until
// commit() the data lives in "<path>.tmp-<pid>" (an io::TemporaryFile, created exclusively: a file
// or link already at that name is refused and left alone); commit() writes the attributes, closes
// the file and renames it over <path>. A writer destroyed without commit() (an exception, a bad
// input half-way) removes its temporary file, so an existing <path> is never left half-written.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/data/dataset.hpp"
#include "cohort/io/output.hpp"

namespace cohort::data {

struct WriterSpec {
  DatasetKind kind = DatasetKind::kSamples;
  std::int64_t num_samples = 0;  // sample datasets
  std::vector<std::int64_t> sample_shape;
  DType input_dtype = DType::kFloat32;
  std::vector<std::int64_t> target_shape;  // [] for a scalar label
  DType target_dtype = DType::kInt64;
  std::int64_t num_tokens = 0;  // token datasets
  DType token_dtype = DType::kUInt16;
  std::int64_t seq_len = 0;
  std::int64_t vocab_size = 0;
  std::int64_t classes = 0;
  std::vector<double> mean, stddev;
  std::string split;
  std::string source;
  std::string source_checksum;
  std::vector<std::pair<std::string, std::string>> extra;  // further string attributes
  std::size_t chunk_bytes = kDefaultChunkBytes;
};

class DatasetWriter {
 public:
  DatasetWriter(std::string path, WriterSpec spec);
  ~DatasetWriter();
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;

  // count rows from row `first`: inputs as spec.input_dtype, targets as spec.target_dtype.
  void write_samples(std::int64_t first, std::int64_t count, const void* inputs,
                     const void* targets);
  void write_tokens(std::int64_t first, std::int64_t count, const void* tokens);
  // Writes the attributes, closes the file, checks it as describe() will (IoError otherwise,
  // and the temporary file is removed), renames it to path() and returns that description.
  DatasetInfo commit();

  const std::string& path() const { return path_; }

 private:
  struct Handles;
  void create_datasets();

  std::string path_;
  io::TemporaryFile temp_;  // declared before handles_: the file closes before its removal
  WriterSpec spec_;
  std::unique_ptr<Handles> handles_;
};

// One field of a field dataset (docs/formats/dataset.md "Field datasets").
struct FieldSpec {
  std::string name;
  bool target = false;  // under /targets (else /inputs)
  bool ragged = false;
  std::vector<std::int64_t> shape;  // fixed: one sample's; ragged: one value's
  DType dtype = DType::kFloat32;
  std::int64_t values = 0;  // ragged: V, the values of all samples
  std::int64_t vocab_size = 0;
  std::vector<double> mean, stddev;
};

// FieldWriter: writes one field dataset (format version 2), atomically, as DatasetWriter does.
//
// Protocol: construct with the path, the file's attributes (spec: num_samples, classes, split,
// source, extra, chunk_bytes; kind is fields) and the fields; write fixed fields' rows in any
// order (write_rows) and ragged fields' samples in order (append: their lengths and values, the
// samples after those already appended); then commit(), which writes the offsets and the
// attributes and checks that every ragged field got all its samples and values.
class FieldWriter {
 public:
  FieldWriter(std::string path, WriterSpec spec, std::vector<FieldSpec> fields);
  ~FieldWriter();
  FieldWriter(const FieldWriter&) = delete;
  FieldWriter& operator=(const FieldWriter&) = delete;

  void write_rows(std::size_t field, std::int64_t first, std::int64_t count, const void* data);
  void append(std::size_t field, const std::vector<std::int64_t>& lengths, const void* values);
  DatasetInfo commit();

 private:
  struct Handles;
  std::string path_;
  io::TemporaryFile temp_;  // declared before handles_: the file closes before its removal
  WriterSpec spec_;
  std::vector<FieldSpec> fields_;
  std::unique_ptr<Handles> handles_;
};

// The spec that reproduces an existing dataset's layout and attributes (for split, etc.).
WriterSpec spec_like(const DatasetInfo& info, std::int64_t num_samples);

}  // namespace cohort::data
