#include "cohort/data/writer.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "cohort/config.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "io/h5/file.hpp"

namespace cohort::data {
namespace h5 = io::h5;

struct DatasetWriter::Handles {
  h5::Hid file;
  h5::Hid inputs;   // or /tokens
  h5::Hid targets;  // sample datasets only
};

namespace {

std::string utc_now() {
  char text[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

DatasetWriter::DatasetWriter(std::string path, WriterSpec spec)
    : path_(std::move(path)),
      temp_path_(path_ + ".tmp-" + std::to_string(::getpid())),
      spec_(std::move(spec)),
      handles_(std::make_unique<Handles>()) {
  try {
    create_datasets();
  } catch (...) {  // rethrown: no destructor runs for a half-built writer, so clean up here
    handles_.reset();
    std::remove(temp_path_.c_str());
    throw;
  }
}

void DatasetWriter::create_datasets() {
  COHORT_CHECK(spec_.kind != DatasetKind::kTokens || spec_.seq_len >= 1, UsageError, path_,
               ": a token dataset needs seq_len >= 1");
  handles_->file = h5::create_file(temp_path_);
  if (spec_.kind == DatasetKind::kTokens) {
    handles_->inputs = h5::create_dataset(handles_->file.get(), "/tokens", spec_.token_dtype,
                                          spec_.num_tokens, {}, spec_.chunk_bytes, path_);
  } else {
    handles_->inputs =
        h5::create_dataset(handles_->file.get(), "/inputs", spec_.input_dtype, spec_.num_samples,
                           spec_.sample_shape, spec_.chunk_bytes, path_ + ": /inputs");
    handles_->targets =
        h5::create_dataset(handles_->file.get(), "/targets", spec_.target_dtype, spec_.num_samples,
                           spec_.target_shape, spec_.chunk_bytes, path_ + ": /targets");
  }
}

DatasetWriter::~DatasetWriter() {
  if (handles_) {
    handles_.reset();  // close before unlinking
    std::remove(temp_path_.c_str());
  }
}

void DatasetWriter::write_samples(std::int64_t first, std::int64_t count, const void* inputs,
                                  const void* targets) {
  COHORT_CHECK(handles_ && spec_.kind == DatasetKind::kSamples, UsageError, path_,
               ": write_samples on a token dataset or after commit");
  h5::write_rows(handles_->inputs.get(), first, count, spec_.input_dtype, inputs,
                 path_ + ": /inputs");
  h5::write_rows(handles_->targets.get(), first, count, spec_.target_dtype, targets,
                 path_ + ": /targets");
}

void DatasetWriter::write_tokens(std::int64_t first, std::int64_t count, const void* tokens) {
  COHORT_CHECK(handles_ && spec_.kind == DatasetKind::kTokens, UsageError, path_,
               ": write_tokens on a sample dataset or after commit");
  h5::write_rows(handles_->inputs.get(), first, count, spec_.token_dtype, tokens,
                 path_ + ": /tokens");
}

DatasetInfo DatasetWriter::commit() {
  COHORT_CHECK(handles_, UsageError, path_, ": committed twice");
  const hid_t file = handles_->file.get();
  h5::write_attribute(file, "format_version", std::int64_t{kFormatVersion}, path_);
  h5::write_attribute(file, "kind", to_string(spec_.kind), path_);
  h5::write_attribute(file, "classes", spec_.classes, path_);
  if (spec_.kind == DatasetKind::kTokens) {
    h5::write_attribute(file, "seq_len", spec_.seq_len, path_);
    h5::write_attribute(file, "vocab_size", spec_.vocab_size, path_);
  }
  if (!spec_.mean.empty()) h5::write_attribute(file, "mean", spec_.mean, path_);
  if (!spec_.stddev.empty()) h5::write_attribute(file, "std", spec_.stddev, path_);
  if (!spec_.split.empty()) h5::write_attribute(file, "split", spec_.split, path_);
  h5::write_attribute(file, "source", spec_.source, path_);
  if (!spec_.source_checksum.empty()) {
    h5::write_attribute(file, "source_checksum", spec_.source_checksum, path_);
  }
  for (const auto& [key, value] : spec_.extra) h5::write_attribute(file, key, value, path_);
  h5::write_attribute(file, "cohort_version", std::string(COHORT_VERSION), path_);
  h5::write_attribute(file, "created", utc_now(), path_);
  handles_.reset();  // flushes and closes the file
  // Validated as every reader will see it before it takes the final name: an invalid file never
  // replaces a good one (the temporary is removed either way).
  std::string problem;
  DatasetInfo info;
  try {
    info = describe(temp_path_);
  } catch (const IoError& e) {
    problem = e.what();
  }
  if (!problem.empty()) {
    std::remove(temp_path_.c_str());
    COHORT_THROW(IoError, path_, ": not written: ", problem);
  }
  io::commit_file(temp_path_, path_);            // durable; removes the temporary if it fails
  info.path = info.shards.front().path = path_;  // described under its temporary name
  return info;
}

WriterSpec spec_like(const DatasetInfo& info, std::int64_t num_samples) {
  WriterSpec spec;
  spec.kind = info.kind;
  spec.num_samples = num_samples;
  spec.sample_shape = info.sample_shape;
  spec.input_dtype = info.input_dtype;
  spec.target_shape = info.target_shape;
  spec.target_dtype = info.target_dtype;
  spec.token_dtype = info.input_dtype;
  spec.seq_len = info.seq_len;
  spec.vocab_size = info.vocab_size;
  spec.classes = info.classes;
  spec.mean = info.mean;
  spec.stddev = info.stddev;
  spec.split = info.split;
  spec.source = info.source;
  spec.source_checksum = info.source_checksum;
  return spec;
}

}  // namespace cohort::data
