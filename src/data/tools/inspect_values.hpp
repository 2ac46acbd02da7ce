// What `cohort data inspect` reads values with, for every layout: running statistics and
// stored values widened to double, with the range checks training's reader makes. Internal.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cohort/data/tools.hpp"
#include "io/h5/file.hpp"

namespace cohort::data {

struct Accumulator {
  double sum = 0, sq = 0, min = std::numeric_limits<double>::infinity(),
         max = -std::numeric_limits<double>::infinity();
  std::int64_t count = 0;
  void add(double v) {
    sum += v;
    sq += v * v;
    min = std::min(min, v);
    max = std::max(max, v);
    ++count;
  }
  FeatureStats stats() const {
    FeatureStats s;
    if (count == 0) return s;
    s.mean = sum / static_cast<double>(count);
    s.stddev = std::sqrt(std::max(0.0, sq / static_cast<double>(count) - s.mean * s.mean));
    s.min = min;
    s.max = max;
    return s;
  }
};

// Rows [first, first + count) of a dataset stored as dtype, each of per_row values, as doubles.
std::vector<double> read_values(hid_t dataset, DType dtype, io::h5::Run run, std::int64_t per_row,
                                const std::string& where);

// The checks training's reader makes (data/reader.cpp): a value that would index past the
// model's classes or vocabulary stops the inspection too, naming the file.
void check_range(double value, std::int64_t limit, const std::string& where, const char* what,
                 const char* attribute);

// The per-field part of an inspection of a field dataset (Inspection::fields).
void inspect_fields(const DatasetInfo& info, Inspection& out);

}  // namespace cohort::data
