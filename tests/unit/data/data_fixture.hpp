// A scratch directory and small datasets written through DatasetWriter, for the data unit tests.
// Sample i of make_rows() has every input value equal to i and target i % 10, so a batch's
// content says which samples it holds.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cohort/data/writer.hpp"

namespace cohort::test {

struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    path =
        std::filesystem::temp_directory_path() / ("cohort-data-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline std::string make_rows(const std::string& path, std::int64_t first, std::int64_t count,
                             std::vector<std::int64_t> shape = {3, 4, 4},
                             std::size_t chunk_bytes = data::kDefaultChunkBytes) {
  data::WriterSpec spec;
  spec.num_samples = count;
  spec.sample_shape = shape;
  spec.classes = 10;
  spec.chunk_bytes = chunk_bytes;
  std::int64_t numel = 1;
  for (auto d : shape) numel *= d;
  std::vector<float> x(static_cast<std::size_t>(count * numel));
  std::vector<std::int64_t> y(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    for (std::int64_t e = 0; e < numel; ++e) x[i * numel + e] = static_cast<float>(first + i);
    y[i] = (first + i) % 10;
  }
  data::DatasetWriter writer(path, spec);
  writer.write_samples(0, count, x.data(), y.data());
  writer.commit();
  return path;
}

}  // namespace cohort::test
