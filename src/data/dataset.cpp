// describe(): validates a dataset file or shard directory against docs/formats/dataset.md.
#include "cohort/data/dataset.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "data/fields.hpp"
#include "io/h5/file.hpp"

namespace cohort::data {
namespace h5 = io::h5;
namespace fs = std::filesystem;

std::string to_string(DatasetKind kind) {
  switch (kind) {
    case DatasetKind::kTokens:
      return "tokens";
    case DatasetKind::kFields:
      return "fields";
    case DatasetKind::kSamples:
      break;
  }
  return "samples";
}

std::int64_t DatasetInfo::sample_numel() const {
  std::int64_t numel = 1;
  for (auto d : sample_shape) numel *= d;
  return numel;
}

std::size_t DatasetInfo::sample_bytes() const {
  return static_cast<std::size_t>(sample_numel()) * dtype_size(input_dtype);
}

std::vector<std::string> shard_paths(const std::string& path) {
  std::error_code error;
  const auto status = fs::status(path, error);
  // A dangling link or a loop is said to be one (the file's own open says what else it is).
  COHORT_CHECK(fs::exists(status), IoError, path, ": ", io::describe_path(path));
  if (!fs::is_directory(status)) return {path};
  std::vector<std::string> shards;
  for (const auto& entry : fs::directory_iterator(path)) {
    if (entry.path().extension() == ".h5") shards.push_back(entry.path().string());
  }
  std::sort(shards.begin(), shards.end());
  COHORT_CHECK(!shards.empty(), IoError, path, ": directory holds no *.h5 shard");
  return shards;
}

namespace {

void read_attributes(hid_t file, const std::string& path, DatasetInfo& info) {
  if (auto version = h5::read_number_attribute(file, "format_version", path)) {
    COHORT_CHECK(version->size() == 1 && (*version)[0] >= 1 && (*version)[0] <= kFormatVersion,
                 IoError, path, ": attribute 'format_version' is not 1..", kFormatVersion,
                 " (written by a newer Cohort?)");
    info.format_version = static_cast<int>((*version)[0]);
  }
  if (auto classes = h5::read_number_attribute(file, "classes", path)) {
    COHORT_CHECK(classes->size() == 1 && (*classes)[0] >= 0 && (*classes)[0] <= 2147483648.0,
                 IoError, path, ": attribute 'classes' must be one count in 0..2^31");
    info.classes = static_cast<std::int64_t>((*classes)[0]);
  }
  if (auto mean = h5::read_number_attribute(file, "mean", path)) info.mean = *mean;
  if (auto stddev = h5::read_number_attribute(file, "std", path)) info.stddev = *stddev;
  if (auto split = h5::read_string_attribute(file, "split", path)) info.split = *split;
  if (auto source = h5::read_string_attribute(file, "source", path)) info.source = *source;
  if (auto name = h5::read_string_attribute(file, "tokenizer", path)) info.tokenizer = *name;
  if (auto sum = h5::read_string_attribute(file, "tokenizer_checksum", path)) {
    info.tokenizer_checksum = *sum;
  }
  if (auto names = h5::read_string_attribute(file, "class_names", path)) info.class_names = *names;
  if (auto sum = h5::read_string_attribute(file, "source_checksum", path)) {
    info.source_checksum = *sum;
  }
}

void describe_tokens(hid_t file, const std::string& path, DatasetInfo& info, ShardInfo& shard) {
  const std::string where = path + ": dataset '/tokens'";
  h5::Hid tokens = h5::open_dataset(file, "/tokens", path);
  const auto extent = h5::dims(tokens.get(), where);
  COHORT_CHECK(extent.size() == 1, IoError, where, ": expected rank 1 [T], found ",
               shape_text(extent));
  info.input_dtype = h5::stored_dtype(tokens.get(), where);
  COHORT_CHECK(info.input_dtype == DType::kUInt16 || info.input_dtype == DType::kInt32, IoError,
               where, ": dtype ", to_string(info.input_dtype), " is not uint16 or int32");
  auto seq_len = h5::read_number_attribute(file, "seq_len", path);
  COHORT_CHECK(seq_len && seq_len->size() == 1 && (*seq_len)[0] >= 1 && (*seq_len)[0] < 9e15,
               IoError, path, ": token dataset needs attribute 'seq_len' >= 1");
  info.seq_len = static_cast<std::int64_t>((*seq_len)[0]);
  if (auto vocab = h5::read_number_attribute(file, "vocab_size", path)) {
    COHORT_CHECK(vocab->size() == 1 && (*vocab)[0] >= 1 && (*vocab)[0] <= 2147483648.0, IoError,
                 path, ": attribute 'vocab_size' must be one count in 1..2^31");
    info.vocab_size = static_cast<std::int64_t>(vocab->at(0));
  }
  info.kind = DatasetKind::kTokens;
  info.sample_shape = {info.seq_len};
  info.target_shape = {info.seq_len};
  info.target_dtype = DType::kInt64;
  h5::check_backed(tokens.get(), dtype_size(info.input_dtype), where);
  shard.tokens = extent[0];
  shard.samples = extent[0] > 0 ? (extent[0] - 1) / info.seq_len : 0;
  shard.chunk = h5::chunk_dims(tokens.get(), where);
  COHORT_CHECK(shard.samples > 0, IoError, where, ": empty dataset (", extent[0],
               " tokens, fewer than seq_len + 1 = ", info.seq_len + 1, ")");
}

void describe_samples(hid_t file, const std::string& path, DatasetInfo& info, ShardInfo& shard) {
  const std::string in_where = path + ": dataset '/inputs'";
  const std::string target_where = path + ": dataset '/targets'";
  h5::Hid inputs = h5::open_dataset(file, "/inputs", path);
  h5::Hid targets = h5::open_dataset(file, "/targets", path);
  const auto in_extent = h5::dims(inputs.get(), in_where);
  const auto target_extent = h5::dims(targets.get(), target_where);
  COHORT_CHECK(in_extent.size() >= 2, IoError, in_where, ": expected rank >= 2 [N, ...], found ",
               shape_text(in_extent));
  COHORT_CHECK(target_extent.size() >= 1, IoError, target_where,
               ": expected rank >= 1 [N] or [N, ...], found a scalar");
  info.input_dtype = h5::stored_dtype(inputs.get(), in_where);
  COHORT_CHECK(info.input_dtype == DType::kFloat32 || info.input_dtype == DType::kFloat16 ||
                   info.input_dtype == DType::kUInt8,
               IoError, in_where, ": dtype ", to_string(info.input_dtype),
               " is not float32, float16 or uint8");
  info.target_dtype = h5::stored_dtype(targets.get(), target_where);
  COHORT_CHECK(info.target_dtype == DType::kInt64 || info.target_dtype == DType::kFloat32, IoError,
               target_where, ": dtype ", to_string(info.target_dtype), " is not int64 or float32");
  COHORT_CHECK(in_extent[0] == target_extent[0], IoError, path, ": '/inputs' has ", in_extent[0],
               " samples but '/targets' has ", target_extent[0]);
  COHORT_CHECK(in_extent[0] > 0, IoError, in_where, ": empty dataset (0 samples)");
  for (std::size_t d = 1; d < in_extent.size(); ++d) {
    COHORT_CHECK(in_extent[d] > 0, IoError, in_where, ": samples of shape ",
                 shape_text({in_extent.begin() + 1, in_extent.end()}), " hold no element");
  }
  h5::check_backed(inputs.get(), dtype_size(info.input_dtype), in_where);
  h5::check_backed(targets.get(), dtype_size(info.target_dtype), target_where);
  info.sample_shape.assign(in_extent.begin() + 1, in_extent.end());
  info.target_shape.assign(target_extent.begin() + 1, target_extent.end());
  shard.samples = in_extent[0];
  shard.chunk = h5::chunk_dims(inputs.get(), in_where);
}

void check_same(const DatasetInfo& first, const DatasetInfo& other, const std::string& path) {
  const std::string against = " differs from " + first.shards.front().path + "'s ";
  COHORT_CHECK(first.kind == other.kind, IoError, path, ": kind ", to_string(other.kind), against,
               to_string(first.kind), " (inconsistent shards)");
  if (first.kind == DatasetKind::kFields) {
    check_same_fields(first, other, path);
    COHORT_CHECK(first.classes == other.classes, IoError, path, ": classes ", other.classes,
                 against, first.classes, " (inconsistent shards)");
    return;
  }
  COHORT_CHECK(first.sample_shape == other.sample_shape, IoError, path, ": sample shape ",
               shape_text(other.sample_shape), against, shape_text(first.sample_shape),
               " (inconsistent shards)");
  COHORT_CHECK(first.target_shape == other.target_shape, IoError, path, ": target shape ",
               shape_text(other.target_shape), against, shape_text(first.target_shape),
               " (inconsistent shards)");
  COHORT_CHECK(first.input_dtype == other.input_dtype && first.target_dtype == other.target_dtype,
               IoError, path, ": dtypes ", to_string(other.input_dtype), "/",
               to_string(other.target_dtype), against, to_string(first.input_dtype), "/",
               to_string(first.target_dtype), " (inconsistent shards)");
  COHORT_CHECK(first.classes == other.classes, IoError, path, ": classes ", other.classes, against,
               first.classes, " (inconsistent shards)");
  COHORT_CHECK(first.tokenizer_checksum == other.tokenizer_checksum, IoError, path,
               ": tokenizer_checksum '", other.tokenizer_checksum, "'", against, "'",
               first.tokenizer_checksum, "' (shards tokenized by different models)");
}

DatasetInfo describe_shard(const std::string& path) {
  DatasetInfo info;
  info.path = path;
  ShardInfo shard;
  shard.path = path;
  h5::Hid file = h5::open_file(path);
  read_attributes(file.get(), path, info);
  if (h5::has_dataset(file.get(), "/tokens")) {
    describe_tokens(file.get(), path, info, shard);
  } else if (h5::has_group(file.get(), "/inputs")) {
    describe_fields(file.get(), path, info, shard);  // fields carry their own mean/std
    info.num_samples = shard.samples;
    info.shards.push_back(shard);
    return info;
  } else {
    describe_samples(file.get(), path, info, shard);
  }
  const auto channels = info.sample_shape.empty() ? 1 : info.sample_shape.front();
  check_statistics(info.mean, info.stddev, channels, path);
  for (double m : info.mean) {
    // Bytes average to a value in [0, 255]: anything else was not computed from them (Cohort's
    // fashion-mnist importer before 2026-12 read pixels as signed and stored -7.61).
    COHORT_CHECK(info.input_dtype != DType::kUInt8 || (m >= 0 && m <= 255), IoError, path,
                 ": attribute 'mean' is ", m, ", outside the range of its uint8 inputs [0, 255]; ",
                 "import the data again (cohort data import)");
  }
  info.num_samples = shard.samples;
  info.shards.push_back(shard);
  return info;
}

}  // namespace

DatasetInfo describe(const std::string& path) {
  const auto paths = shard_paths(path);
  DatasetInfo info = describe_shard(paths.front());
  info.path = path;
  for (std::size_t i = 1; i < paths.size(); ++i) {
    DatasetInfo other = describe_shard(paths[i]);
    check_same(info, other, paths[i]);
    info.num_samples += other.num_samples;
    info.shards.push_back(other.shards.front());
    for (std::size_t f = 0; f < info.fields.size(); ++f) {
      auto& field = info.fields[f];
      field.max_length = std::max(field.max_length, other.fields[f].max_length);
      if (field.ragged && f == 0) info.sample_shape.front() = field.max_length;
    }
  }
  return info;
}

std::vector<std::int64_t> sample_lengths(const DatasetInfo& info, std::size_t field) {
  COHORT_CHECK(field < info.fields.size() && info.fields[field].ragged, UsageError, info.path,
               ": field ", field, " is not a ragged field");
  std::vector<std::int64_t> lengths;
  lengths.reserve(static_cast<std::size_t>(info.num_samples));
  for (const auto& shard : info.shards) {
    const auto& offsets = *shard.offsets.at(field);
    for (std::size_t i = 1; i < offsets.size(); ++i) lengths.push_back(offsets[i] - offsets[i - 1]);
  }
  return lengths;
}

void check_same_tokenizer(const DatasetInfo& train, const DatasetInfo& val) {
  const auto model = [](const DatasetInfo& info) {
    return info.tokenizer_checksum.empty()
               ? std::string("no tokenizer model")
               : "tokenizer " + info.tokenizer + " (" + info.tokenizer_checksum + ")";
  };
  COHORT_CHECK(train.tokenizer_checksum == val.tokenizer_checksum, IoError, val.path, ": ",
               model(val), ", but ", train.path, " has ", model(train),
               ": their token ids do not mean the same");
}

}  // namespace cohort::data
