#include "data/tools/inspect_values.hpp"

#include <cmath>
#include <cstring>

#include "cohort/error.hpp"

namespace cohort::data {
namespace {

// IEEE 754 binary16 to double.
double half_to_double(std::uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) {
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  }
  return sign * std::ldexp(mantissa + 1024, exponent - 25);
}

}  // namespace

std::vector<double> read_values(hid_t dataset, DType dtype, io::h5::Run run, std::int64_t per_row,
                                const std::string& where) {
  const auto n = static_cast<std::size_t>(run.count * per_row);
  std::vector<unsigned char> stored(n * dtype_size(dtype));
  io::h5::read_runs(dataset, {run}, dtype, stored.data(), H5P_DEFAULT, false, where);
  std::vector<double> out(n);
  const auto element = [&](std::size_t i, auto type) {
    decltype(type) v;
    std::memcpy(&v, stored.data() + i * sizeof v, sizeof v);
    return v;
  };
  for (std::size_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::kUInt8:
        out[i] = element(i, std::uint8_t{});
        break;
      case DType::kUInt16:
        out[i] = element(i, std::uint16_t{});
        break;
      case DType::kInt32:
        out[i] = element(i, std::int32_t{});
        break;
      case DType::kInt64:
        out[i] = static_cast<double>(element(i, std::int64_t{}));
        break;
      case DType::kFloat16:
        out[i] = half_to_double(element(i, std::uint16_t{}));
        break;
      case DType::kFloat32:
        out[i] = element(i, float{});
        break;
      case DType::kFloat64:
        out[i] = element(i, double{});
        break;
    }
  }
  return out;
}

void check_range(double value, std::int64_t limit, const std::string& where, const char* what,
                 const char* attribute) {
  COHORT_CHECK(value >= 0 && (limit <= 0 || value < static_cast<double>(limit)), IoError, where,
               ": ", what, " ", static_cast<std::int64_t>(value), " is outside 0..", limit - 1,
               " (attribute '", attribute, "')");
}

}  // namespace cohort::data
