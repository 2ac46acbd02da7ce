// describe() for field datasets: every field's layout, attributes and (ragged) offsets checked
// against what the file holds, before any reader sizes a buffer from them.
#include "data/fields.hpp"

#include <algorithm>
#include <cmath>

#include "cohort/error.hpp"
#include "io/h5/file.hpp"

namespace cohort::data {
namespace h5 = io::h5;
namespace {

bool valid_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

DType field_dtype(hid_t dataset, const std::string& where) {
  const DType dtype = h5::stored_dtype(dataset, where);
  COHORT_CHECK(dtype != DType::kFloat64, IoError, where,
               ": dtype float64 is not read (store float32 or float16)");
  return dtype;
}

// mean/std/vocab_size on the field's own object (dataset or ragged group).
void read_field_attributes(hid_t object, const std::string& where, FieldInfo& field) {
  const std::int64_t channels = field.shape.empty() ? 1 : field.shape.front();
  if (auto mean = h5::read_number_attribute(object, "mean", where)) field.mean = *mean;
  if (auto stddev = h5::read_number_attribute(object, "std", where)) field.stddev = *stddev;
  check_statistics(field.mean, field.stddev, channels, where);
  COHORT_CHECK(field.mean.empty() == field.stddev.empty(), IoError, where,
               ": attributes 'mean' and 'std' come together");
  if (auto vocab = h5::read_number_attribute(object, "vocab_size", where)) {
    COHORT_CHECK(vocab->size() == 1 && (*vocab)[0] >= 1 && (*vocab)[0] <= 2147483648.0, IoError,
                 where, ": attribute 'vocab_size' must be one count in 1..2^31");
    COHORT_CHECK(field.integer(), IoError, where, ": attribute 'vocab_size' on a ",
                 to_string(field.dtype), " field (integer fields only)");
    field.vocab_size = static_cast<std::int64_t>(vocab->at(0));
  }
}

// A fixed field: [N, ...]; returns N.
std::int64_t describe_fixed(hid_t file, const std::string& path, FieldInfo& field) {
  const std::string where = path + ": dataset '" + field.location + "'";
  h5::Hid set = h5::open_dataset(file, field.location, path);
  const auto extent = h5::dims(set.get(), where);
  COHORT_CHECK(!extent.empty(), IoError, where, ": expected [N, ...], found a scalar");
  for (std::size_t d = 1; d < extent.size(); ++d) {
    COHORT_CHECK(extent[d] > 0, IoError, where, ": samples of shape ",
                 shape_text({extent.begin() + 1, extent.end()}), " hold no element");
  }
  field.dtype = field_dtype(set.get(), where);
  h5::check_backed(set.get(), dtype_size(field.dtype), where);
  field.shape.assign(extent.begin() + 1, extent.end());
  read_field_attributes(set.get(), where, field);
  return extent[0];
}

// A ragged field: values [V, ...] and offsets [N + 1], read and checked in full (the reader
// locates samples by them, so a bad offset must fail here, not size a buffer).
std::int64_t describe_ragged(hid_t file, const std::string& path, FieldInfo& field,
                             std::shared_ptr<const std::vector<std::int64_t>>& offsets_out) {
  const std::string group_where = path + ": group '" + field.location + "'";
  const std::string values_name = field.location + "/values";
  const std::string offsets_name = field.location + "/offsets";
  const std::string values_where = path + ": dataset '" + values_name + "'";
  const std::string offsets_where = path + ": dataset '" + offsets_name + "'";
  COHORT_CHECK(h5::has_dataset(file, values_name) && h5::has_dataset(file, offsets_name), IoError,
               group_where, ": a ragged field holds datasets 'values' and 'offsets'");
  h5::Hid values = h5::open_dataset(file, values_name, path);
  h5::Hid offsets = h5::open_dataset(file, offsets_name, path);
  const auto value_extent = h5::dims(values.get(), values_where);
  const auto offset_extent = h5::dims(offsets.get(), offsets_where);
  COHORT_CHECK(!value_extent.empty(), IoError, values_where, ": expected [V, ...], a scalar");
  for (std::size_t d = 1; d < value_extent.size(); ++d) {
    COHORT_CHECK(value_extent[d] > 0, IoError, values_where, ": values of shape ",
                 shape_text({value_extent.begin() + 1, value_extent.end()}), " hold no element");
  }
  COHORT_CHECK(offset_extent.size() == 1 && offset_extent[0] >= 2, IoError, offsets_where,
               ": expected [N + 1] with N >= 1, found ", shape_text(offset_extent));
  COHORT_CHECK(h5::stored_dtype(offsets.get(), offsets_where) == DType::kInt64, IoError,
               offsets_where, ": dtype ", to_string(h5::stored_dtype(offsets.get(), offsets_where)),
               " is not int64");
  field.dtype = field_dtype(values.get(), values_where);
  h5::check_backed(values.get(), dtype_size(field.dtype), values_where);
  h5::check_backed(offsets.get(), sizeof(std::int64_t), offsets_where);
  field.shape.assign(value_extent.begin() + 1, value_extent.end());
  const h5::Hid group = h5::open_group(file, field.location, group_where);
  read_field_attributes(group.get(), group_where, field);

  auto table =
      std::make_shared<std::vector<std::int64_t>>(static_cast<std::size_t>(offset_extent[0]));
  h5::read_runs(offsets.get(), {h5::Run{0, offset_extent[0]}}, DType::kInt64, table->data(),
                H5P_DEFAULT, false, offsets_where);
  field.max_length = check_ragged_offsets(*table, value_extent[0], offsets_where);
  offsets_out = std::move(table);
  return offset_extent[0] - 1;
}

// The members of one group (/inputs or /targets), or the single dataset /targets.
void describe_group(hid_t file, const std::string& path, const std::string& group, bool target,
                    DatasetInfo& info, ShardInfo& shard) {
  std::vector<std::string> names;
  if (target && h5::has_dataset(file, group)) {
    names.push_back("");
  } else {
    COHORT_CHECK(h5::has_group(file, group), IoError, path, ": no dataset or group '", group, "'");
    names = h5::group_members(file, group, kMaxFields, path);
    COHORT_CHECK(!names.empty(), IoError, path, ": group '", group, "' holds no field");
  }
  for (const auto& name : names) {
    FieldInfo field;
    field.target = target;
    field.name = name.empty() ? "targets" : name;
    field.location = name.empty() ? group : group + "/" + name;
    COHORT_CHECK(valid_name(field.name), IoError, path, ": field '", field.location,
                 "': names are letters, digits and '_'");
    std::shared_ptr<const std::vector<std::int64_t>> offsets;
    const std::int64_t samples =
        h5::has_group(file, field.location)
            ? (field.ragged = true, describe_ragged(file, path, field, offsets))
            : describe_fixed(file, path, field);
    COHORT_CHECK(samples > 0, IoError, path, ": field '", field.location, "' has no sample");
    if (info.fields.empty()) shard.samples = samples;
    COHORT_CHECK(samples == shard.samples, IoError, path, ": field '", field.location, "' has ",
                 samples, " samples but '", info.fields.front().location, "' has ", shard.samples);
    info.fields.push_back(std::move(field));
    shard.offsets.push_back(std::move(offsets));
  }
}

// A field's one-sample shape as DatasetInfo's summary gives it (ragged: [max_length, value...]).
std::vector<std::int64_t> summary_shape(const FieldInfo& field) {
  std::vector<std::int64_t> shape = field.shape;
  if (field.ragged) shape.insert(shape.begin(), field.max_length);
  return shape;
}

}  // namespace

void select_target(DatasetInfo& info, const std::string& name) {
  std::string targets;
  for (const auto& field : info.fields) {
    if (!field.target) continue;
    if (field.name == name) {
      info.target = name;
      info.target_shape = summary_shape(field);
      info.target_dtype = field.dtype;
      return;
    }
    targets += (targets.empty() ? "'" : ", '") + field.name + "'";
  }
  COHORT_THROW(ConfigError, "data.target = '", name, "': ", info.path,
               info.kind == DatasetKind::kFields
                   ? " has no such target (its targets: " + targets + ")"
                   : std::string(" is not a field dataset (one target)"));
}

bool FieldInfo::integer() const {
  return dtype == DType::kUInt16 || dtype == DType::kInt32 || dtype == DType::kInt64;
}

void describe_fields(hid_t file, const std::string& path, DatasetInfo& info, ShardInfo& shard) {
  info.kind = DatasetKind::kFields;
  info.format_version = std::max(info.format_version, 2);
  describe_group(file, path, "/inputs", false, info, shard);
  const std::size_t inputs = info.fields.size();
  describe_group(file, path, "/targets", true, info, shard);
  for (const auto& field : info.fields) {
    if (!field.ragged) continue;
    for (const auto& other : info.fields) {
      COHORT_CHECK(other.target != field.target || other.name != field.name + "_mask", IoError,
                   path, ": field '", other.location, "' has the name of '", field.location,
                   "''s mask");
    }
  }
  info.sample_shape = summary_shape(info.fields.front());
  info.input_dtype = info.fields.front().dtype;
  info.target_shape = summary_shape(info.fields[inputs]);
  info.target_dtype = info.fields[inputs].dtype;
  info.target = info.fields[inputs].name;
  if (info.fields.front().integer()) info.vocab_size = info.fields.front().vocab_size;
}

void check_same_fields(const DatasetInfo& first, const DatasetInfo& other,
                       const std::string& path) {
  const std::string against = first.shards.front().path;
  const auto list = [](const DatasetInfo& info) {
    std::string text;
    for (const auto& f : info.fields) text += (text.empty() ? "" : ", ") + f.location;
    return text;
  };
  COHORT_CHECK(first.fields.size() == other.fields.size(), IoError, path, ": fields ", list(other),
               " differ from ", against, "'s ", list(first), " (inconsistent shards)");
  for (std::size_t i = 0; i < first.fields.size(); ++i) {
    const FieldInfo& a = first.fields[i];
    const FieldInfo& b = other.fields[i];
    COHORT_CHECK(a.location == b.location, IoError, path, ": fields ", list(other), " differ from ",
                 against, "'s ", list(first), " (inconsistent shards)");
    COHORT_CHECK(a.ragged == b.ragged && a.shape == b.shape && a.dtype == b.dtype, IoError, path,
                 ": field '", b.location, "' is ", b.ragged ? "ragged " : "", to_string(b.dtype),
                 " ", shape_text(b.shape), " but ", a.ragged ? "ragged " : "", to_string(a.dtype),
                 " ", shape_text(a.shape), " in ", against, " (inconsistent shards)");
    COHORT_CHECK(a.vocab_size == b.vocab_size && a.mean == b.mean && a.stddev == b.stddev, IoError,
                 path, ": field '", b.location,
                 "' has other attributes (vocab_size, mean, std) than in ", against,
                 " (inconsistent shards)");
  }
}

std::int64_t check_ragged_offsets(const std::vector<std::int64_t>& offsets, std::int64_t values,
                                  const std::string& where) {
  COHORT_CHECK(offsets.size() >= 2, IoError, where,
               ": expected [N + 1] offsets with N >= 1, found ", offsets.size());
  COHORT_CHECK(offsets.front() >= 0, IoError, where, ": offset 0 is ", offsets.front(),
               " (negative)");
  std::int64_t longest = 0;
  for (std::size_t i = 1; i < offsets.size(); ++i) {
    const std::int64_t begin = offsets[i - 1], end = offsets[i];
    COHORT_CHECK(end >= begin, IoError, where, ": offsets are not monotonic (offset ", i, " = ",
                 end, " < offset ", i - 1, " = ", begin, ")");
    longest = std::max(longest, end - begin);
  }
  COHORT_CHECK(offsets.back() <= values, IoError, where, ": the last offset ", offsets.back(),
               " runs past the ", values, " values");
  return longest;
}

void check_statistics(const std::vector<double>& mean, const std::vector<double>& stddev,
                      std::int64_t channels, const std::string& where) {
  for (const auto* stats : {&mean, &stddev}) {
    COHORT_CHECK(
        stats->empty() || stats->size() == 1 ||
            static_cast<std::int64_t>(stats->size()) == channels,
        IoError, where, ": attributes 'mean'/'std' need ",
        channels == 1 ? std::string("1 value") : "1 or " + std::to_string(channels) + " values",
        " (one per channel), found ", stats->size());
  }
  for (double s : stddev) {
    COHORT_CHECK(std::isfinite(s) && s > 0, IoError, where, ": attribute 'std' has ", s);
  }
  for (double m : mean) {
    COHORT_CHECK(std::isfinite(m), IoError, where, ": attribute 'mean' has ", m);
  }
}

}  // namespace cohort::data
