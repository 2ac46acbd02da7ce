// What DatasetWriter and FieldWriter share: the file attributes every dataset carries, and the
// last step of an atomic write. Internal to the data module.
#pragma once

#include <string>

#include "cohort/data/writer.hpp"
#include "io/h5/hid.hpp"

namespace cohort::data {

// format_version, kind, classes, mean/std, split, source, extra, cohort_version, created.
void write_file_attributes(hid_t file, const WriterSpec& spec, int version,
                           const std::string& path);
// Describes the closed temporary file as every reader will; removes it and throws IoError when
// it is invalid, else renames it durably to `path` and returns its description.
DatasetInfo check_and_rename(io::TemporaryFile& temp);

}  // namespace cohort::data
