#include "cohort/io/dtype.hpp"

#include <sstream>

#include "cohort/error.hpp"

namespace cohort::io {

std::string to_string(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
      return "uint8";
    case DType::kUInt16:
      return "uint16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kFloat16:
      return "float16";
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
  }
  return "?";
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
      return 1;
    case DType::kUInt16:
    case DType::kFloat16:
      return 2;
    case DType::kInt32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
    case DType::kFloat64:
      return 8;
  }
  return 0;
}

DType parse_dtype(const std::string& name) {
  for (auto d : {DType::kUInt8, DType::kUInt16, DType::kInt32, DType::kInt64, DType::kFloat16,
                 DType::kFloat32, DType::kFloat64}) {
    if (to_string(d) == name) return d;
  }
  COHORT_THROW(UsageError, "unknown dtype '", name, "' (uint8, uint16, int32, int64, float16, ",
               "float32, float64)");
}

std::int64_t shape_numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (const auto d : shape) n *= d;
  return n;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

}  // namespace cohort::io
