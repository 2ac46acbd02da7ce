#include <unistd.h>

#include <cstdio>

#include "cohort/data/writer.hpp"
#include "cohort/error.hpp"
#include "data/writer_common.hpp"
#include "io/h5/file.hpp"

namespace cohort::data {
namespace h5 = io::h5;

struct FieldWriter::Handles {
  h5::Hid file;
  std::vector<h5::Hid> sets;                       // per field: the dataset, or ragged values
  std::vector<std::vector<std::int64_t>> offsets;  // per ragged field, as appended
};

namespace {

std::string location(const FieldSpec& field) {
  return (field.target ? "/targets/" : "/inputs/") + field.name;
}

}  // namespace

FieldWriter::FieldWriter(std::string path, WriterSpec spec, std::vector<FieldSpec> fields)
    : path_(std::move(path)),
      temp_(path_),
      spec_(std::move(spec)),
      fields_(std::move(fields)),
      handles_(std::make_unique<Handles>()) {
  spec_.kind = DatasetKind::kFields;
  try {
    handles_->file = h5::create_new_file(temp_.path());
    temp_.adopt();
    const hid_t file = handles_->file.get();
    h5::create_group(file, "/inputs", path_);
    h5::create_group(file, "/targets", path_);
    for (const auto& field : fields_) {
      const std::string name = location(field);
      if (field.ragged) h5::create_group(file, name, path_);
      handles_->sets.push_back(
          h5::create_dataset(file, field.ragged ? name + "/values" : name, field.dtype,
                             field.ragged ? field.values : spec_.num_samples, field.shape,
                             spec_.chunk_bytes, path_ + ": " + name));
      handles_->offsets.push_back(field.ragged ? std::vector<std::int64_t>{0}
                                               : std::vector<std::int64_t>{});
    }
  } catch (...) {  // rethrown: no destructor runs for a half-built writer, so clean up here
    handles_.reset();
    temp_.discard();
    throw;
  }
}

FieldWriter::~FieldWriter() = default;  // handles_ closes the file, then temp_ removes it

void FieldWriter::write_rows(std::size_t field, std::int64_t first, std::int64_t count,
                             const void* data) {
  COHORT_CHECK(handles_ && field < fields_.size() && !fields_[field].ragged, UsageError, path_,
               ": write_rows on a ragged or unknown field, or after commit");
  h5::write_rows(handles_->sets[field].get(), first, count, fields_[field].dtype, data,
                 path_ + ": " + location(fields_[field]));
}

void FieldWriter::append(std::size_t field, const std::vector<std::int64_t>& lengths,
                         const void* values) {
  COHORT_CHECK(handles_ && field < fields_.size() && fields_[field].ragged, UsageError, path_,
               ": append on a fixed or unknown field, or after commit");
  auto& offsets = handles_->offsets[field];
  const std::int64_t first = offsets.back();
  for (const auto length : lengths) {
    COHORT_CHECK(length >= 0 && offsets.back() + length <= fields_[field].values, UsageError, path_,
                 ": field '", fields_[field].name, "' gets more than its ", fields_[field].values,
                 " values");
    offsets.push_back(offsets.back() + length);
  }
  h5::write_rows(handles_->sets[field].get(), first, offsets.back() - first, fields_[field].dtype,
                 values, path_ + ": " + location(fields_[field]));
}

DatasetInfo FieldWriter::commit() {
  COHORT_CHECK(handles_, UsageError, path_, ": committed twice");
  const hid_t file = handles_->file.get();
  for (std::size_t f = 0; f < fields_.size(); ++f) {
    const FieldSpec& field = fields_[f];
    const std::string name = location(field);
    const auto& offsets = handles_->offsets[f];
    if (field.ragged) {
      COHORT_CHECK(static_cast<std::int64_t>(offsets.size()) == spec_.num_samples + 1 &&
                       offsets.back() == field.values,
                   UsageError, path_, ": field '", field.name, "' got ", offsets.size() - 1,
                   " samples and ", offsets.back(), " values of ", spec_.num_samples, " and ",
                   field.values);
      h5::Hid set = h5::create_dataset(file, name + "/offsets", DType::kInt64,
                                       spec_.num_samples + 1, {}, spec_.chunk_bytes, path_);
      h5::write_rows(set.get(), 0, spec_.num_samples + 1, DType::kInt64, offsets.data(), path_);
    }
    const h5::Hid object =
        field.ragged ? h5::open_group(file, name, path_) : h5::open_dataset(file, name, path_);
    if (field.vocab_size > 0)
      h5::write_attribute(object.get(), "vocab_size", field.vocab_size, path_);
    if (!field.mean.empty()) h5::write_attribute(object.get(), "mean", field.mean, path_);
    if (!field.stddev.empty()) h5::write_attribute(object.get(), "std", field.stddev, path_);
  }
  write_file_attributes(file, spec_, 2, path_);
  handles_.reset();  // flushes and closes the file
  return check_and_rename(temp_);
}

}  // namespace cohort::data
