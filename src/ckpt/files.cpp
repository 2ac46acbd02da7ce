#include "ckpt/files.hpp"

#include <sys/stat.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include "cohort/error.hpp"

namespace cohort::ckpt {
namespace {

const std::map<c10::ScalarType, std::string>& dtype_names() {
  static const std::map<c10::ScalarType, std::string> kNames = {
      {c10::kFloat, "float32"},     {c10::kDouble, "float64"}, {c10::kHalf, "float16"},
      {c10::kBFloat16, "bfloat16"}, {c10::kLong, "int64"},     {c10::kInt, "int32"},
      {c10::kByte, "uint8"},        {c10::kBool, "bool"}};
  return kNames;
}

}  // namespace

std::string dtype_name(c10::ScalarType type) {
  const auto it = dtype_names().find(type);
  COHORT_CHECK(it != dtype_names().end(), IoError, "checkpoint: tensors of type ", type,
               " are not supported");
  return it->second;
}

c10::ScalarType scalar_type_of(const std::string& dtype) {
  for (const auto& [type, name] : dtype_names()) {
    if (name == dtype) return type;
  }
  COHORT_THROW(IoError, "checkpoint: unknown dtype '", dtype, "'");
}

io::DType storage_of(const std::string& dtype) {
  static const std::map<std::string, io::DType> kTypes = {
      {"float32", io::DType::kFloat32}, {"float64", io::DType::kFloat64},
      {"float16", io::DType::kFloat16}, {"bfloat16", io::DType::kUInt16},
      {"int64", io::DType::kInt64},     {"int32", io::DType::kInt32},
      {"uint8", io::DType::kUInt8},     {"bool", io::DType::kUInt8}};
  const auto it = kTypes.find(dtype);
  COHORT_CHECK(it != kTypes.end(), IoError, "checkpoint: unsupported dtype '", dtype, "'");
  return it->second;
}

}  // namespace cohort::ckpt
