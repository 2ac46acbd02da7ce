// Fuzz target: the checks describe() makes of a field dataset before any reader sizes a buffer
// from it (src/data/fields.cpp): a ragged field's offsets against its values
// (check_ragged_offsets) and a field's mean/std attributes (check_statistics); the HDF5 reads
// around them are not fuzzed here. Bytes 0-7: the number of values V (int64, little-endian);
// byte 8: the channels; byte 9: how many mean (high 4 bits) and std (low 4) doubles follow; then
// those doubles, then the offsets (int64 each). Each check must take exactly what keeps the
// reader inside its buffers and refuse the rest: accepted offsets start at 0 or later, never
// decrease and end at most at V (every sample lies in [0, V)), the longest sample returned is
// the largest step; accepted statistics are 0, 1 or `channels` finite values, every std above 0.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cohort/error.hpp"
#include "data/fields.hpp"
#include "fuzz_contract.hpp"

namespace data = cohort::data;

namespace {

template <typename T>
std::vector<T> take(const std::uint8_t*& at, const std::uint8_t* end, std::size_t count) {
  std::vector<T> values;
  for (; values.size() < count && end - at >= static_cast<std::ptrdiff_t>(sizeof(T));
       at += sizeof(T)) {
    T value;
    std::memcpy(&value, at, sizeof(T));
    values.push_back(value);
  }
  return values;
}

// Whether `body` passed; an IoError is a refusal, anything else breaks the contract.
template <typename Body>
bool accepted(Body&& body) {
  bool passed = false;
  cohort::fuzz::expect_contract([&] {
    try {
      body();
      passed = true;
    } catch (const cohort::IoError&) {
    }
  });
  return passed;
}

bool valid_offsets(const std::vector<std::int64_t>& offsets, std::int64_t values,
                   std::int64_t& longest) {
  if (offsets.size() < 2 || offsets.front() < 0 || offsets.back() > values) return false;
  longest = 0;
  for (std::size_t i = 1; i < offsets.size(); ++i) {
    if (offsets[i] < offsets[i - 1]) return false;
    longest = std::max(longest, offsets[i] - offsets[i - 1]);
  }
  return true;
}

bool valid_statistics(const std::vector<double>& mean, const std::vector<double>& stddev,
                      std::int64_t channels) {
  for (const auto* stats : {&mean, &stddev}) {
    const auto n = static_cast<std::int64_t>(stats->size());
    if (n > 1 && n != channels) return false;
  }
  return std::all_of(mean.begin(), mean.end(), [](double m) { return std::isfinite(m); }) &&
         std::all_of(stddev.begin(), stddev.end(),
                     [](double s) { return std::isfinite(s) && s > 0; });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 10) return 0;
  std::int64_t values = 0;
  std::memcpy(&values, data, sizeof values);
  const std::int64_t channels = 1 + data[8] % 16;
  const std::uint8_t* at = data + 10;
  const std::uint8_t* const end = data + size;
  const auto mean = take<double>(at, end, data[9] >> 4);
  const auto stddev = take<double>(at, end, data[9] & 15);
  const auto offsets = take<std::int64_t>(at, end, size);

  std::int64_t longest = -1, expected = -1;
  const bool offsets_ok = accepted([&] {
    longest = data::check_ragged_offsets(offsets, values, "fuzz.h5: dataset 'inputs/x/offsets'");
  });
  if (offsets_ok != valid_offsets(offsets, values, expected)) std::abort();
  if (offsets_ok && (longest != expected || longest > values)) std::abort();

  const bool statistics_ok = accepted(
      [&] { data::check_statistics(mean, stddev, channels, "fuzz.h5: dataset 'inputs/x'"); });
  if (statistics_ok != valid_statistics(mean, stddev, channels)) std::abort();
  return 0;
}
