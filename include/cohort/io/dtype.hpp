// The element types files hold (HDF5 datasets of datasets and checkpoints alike), their sizes and
// names, and shapes as text for messages and attributes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cohort::io {

enum class DType { kUInt8, kUInt16, kInt32, kInt64, kFloat16, kFloat32, kFloat64 };
std::string to_string(DType dtype);  // "uint8", "float32", ...
std::size_t dtype_size(DType dtype);
DType parse_dtype(const std::string& name);  // "uint8", "float32", ...; throws UsageError
// "[60000, 28, 28]", "[]" for a scalar: for messages, and shape attributes stored as text.
std::string shape_text(const std::vector<std::int64_t>& shape);
// The element count of a shape whose extent is already known to be sane (validated against what
// a file holds); 1 for a scalar's [].
std::int64_t shape_numel(const std::vector<std::int64_t>& shape);

}  // namespace cohort::io
