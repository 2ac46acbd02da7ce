// Internal helpers of the ckpt module: durable file operations and torch dtype names.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/data/dataset.hpp"

namespace cohort::ckpt {

// Writes `text` to `path` (truncating), then fsyncs it. IoError names the file.
void write_file_synced(const std::string& path, std::string_view text);
// Reopens a closed file to fsync it (HDF5 closes its own descriptor). IoError names the file.
void fsync_file(const std::string& path);
// fsync of a directory, so that renames and new entries in it are durable.
void fsync_directory(const std::string& path);
// rename(2) with an IoError naming both paths.
void rename_path(const std::string& from, const std::string& to);
std::string read_small_file(const std::string& path, std::size_t limit);

std::string dtype_name(c10::ScalarType type);  // "float32", ...; IoError for others
c10::ScalarType scalar_type_of(const std::string& dtype);
// How a checkpoint dtype is stored in HDF5, which has no bfloat16 or bool (uint16, uint8).
data::DType storage_of(const std::string& dtype);  // IoError for an unknown dtype
// "[40, 20]", "[]" for a scalar: shapes are attributes as text, because HDF5 refuses empty array
// attributes.
using data::shape_text;
std::uint64_t parse_checksum(const std::string& text);  // "xxh3-64:<hex>"

}  // namespace cohort::ckpt
