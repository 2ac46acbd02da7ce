#include "cohort/data/writer.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "cohort/config.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "data/writer_common.hpp"
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
      temp_(path_),
      spec_(std::move(spec)),
      handles_(std::make_unique<Handles>()) {
  try {
    create_datasets();
  } catch (...) {  // rethrown: no destructor runs for a half-built writer, so clean up here
    handles_.reset();
    temp_.discard();
    throw;
  }
}

void DatasetWriter::create_datasets() {
  COHORT_CHECK(spec_.kind != DatasetKind::kTokens || spec_.seq_len >= 1, UsageError, path_,
               ": a token dataset needs seq_len >= 1");
  handles_->file = h5::create_new_file(temp_.path());
  temp_.adopt();
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

DatasetWriter::~DatasetWriter() = default;  // handles_ closes the file, then temp_ removes it

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

void write_file_attributes(hid_t file, const WriterSpec& spec, int version,
                           const std::string& path) {
  h5::write_attribute(file, "format_version", std::int64_t{version}, path);
  h5::write_attribute(file, "kind", to_string(spec.kind), path);
  h5::write_attribute(file, "classes", spec.classes, path);
  if (spec.kind == DatasetKind::kTokens) {
    h5::write_attribute(file, "seq_len", spec.seq_len, path);
    h5::write_attribute(file, "vocab_size", spec.vocab_size, path);
  }
  if (!spec.mean.empty()) h5::write_attribute(file, "mean", spec.mean, path);
  if (!spec.stddev.empty()) h5::write_attribute(file, "std", spec.stddev, path);
  if (!spec.split.empty()) h5::write_attribute(file, "split", spec.split, path);
  h5::write_attribute(file, "source", spec.source, path);
  if (!spec.source_checksum.empty()) {
    h5::write_attribute(file, "source_checksum", spec.source_checksum, path);
  }
  for (const auto& [key, value] : spec.extra) h5::write_attribute(file, key, value, path);
  h5::write_attribute(file, "cohort_version", std::string(COHORT_VERSION), path);
  h5::write_attribute(file, "created", utc_now(), path);
}

DatasetInfo check_and_rename(io::TemporaryFile& temp) {
  const std::string& temp_path = temp.path();
  const std::string& path = temp.final_path();
  // Validated as every reader will see it before it takes the final name: an invalid file never
  // replaces a good one (the temporary is removed either way).
  std::string problem;
  DatasetInfo info;
  try {
    info = describe(temp_path);
  } catch (const IoError& e) {
    problem = e.what();
  }
  if (!problem.empty()) {
    temp.discard();
    COHORT_THROW(IoError, path, ": not written: ", problem);
  }
  temp.commit();                                // durable; removes the temporary if it fails
  info.path = info.shards.front().path = path;  // described under its temporary name
  return info;
}

DatasetInfo DatasetWriter::commit() {
  COHORT_CHECK(handles_, UsageError, path_, ": committed twice");
  // Version 1: these layouts are readable by every Cohort (field datasets are version 2).
  write_file_attributes(handles_->file.get(), spec_, 1, path_);
  handles_.reset();  // flushes and closes the file
  return check_and_rename(temp_);
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
  // What the datasets made from it must still say: which tokenizer, which class names.
  if (!info.tokenizer_checksum.empty()) {
    spec.extra = {{"tokenizer", info.tokenizer}, {"tokenizer_checksum", info.tokenizer_checksum}};
  }
  if (!info.class_names.empty()) spec.extra.push_back({"class_names", info.class_names});
  return spec;
}

}  // namespace cohort::data
