// Internal helpers of the ckpt module: torch dtype names and their storage in HDF5. The file
// operations (durable writes, small reads, checksums) are the io module's, used through these
// names.
#pragma once

#include <c10/core/ScalarType.h>

#include <string>

#include "cohort/io/checksum.hpp"
#include "cohort/io/dtype.hpp"
#include "cohort/io/files.hpp"

namespace cohort::ckpt {

using io::file_bytes;
using io::format_checksum;
using io::fsync_directory;
using io::fsync_file;
using io::make_directories;
using io::parse_checksum;
using io::read_small_file;
using io::rename_path;
using io::shape_text;  // shapes are attributes as text: HDF5 refuses empty array attributes
using io::write_file_synced;

std::string dtype_name(c10::ScalarType type);  // "float32", ...; IoError for others
c10::ScalarType scalar_type_of(const std::string& dtype);
// How a checkpoint dtype is stored in HDF5, which has no bfloat16 or bool (uint16, uint8).
io::DType storage_of(const std::string& dtype);  // IoError for an unknown dtype

}  // namespace cohort::ckpt
