// Readers for the source formats `cohort data import` takes: gzip-or-plain files, IDX (the MNIST
// family), CSV of numbers, NumPy .npy. Each validates its input and throws IoError naming the file
// and what is wrong (never reads past the end of a buffer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/data/dataset.hpp"
#include "cohort/data/tools.hpp"
#include "cohort/data/writer.hpp"

namespace cohort::data::parse {

// A gzip member never inflates beyond `ratio` times its file's size (real data: 2-10 times;
// DEFLATE's own ceiling is 1032), and never below kMinInflateLimit.
inline constexpr std::uint64_t kMinInflateLimit = std::uint64_t{256} << 20;
inline std::uint64_t inflate_limit(std::uint64_t file_bytes, std::uint64_t ratio) {
  const std::uint64_t scaled =
      ratio > 0 && file_bytes > UINT64_MAX / ratio ? UINT64_MAX : file_bytes * ratio;
  return scaled > kMinInflateLimit ? scaled : kMinInflateLimit;
}

// Every import's outputs checked against its sources before anything is written
// (io::OutputPlan): `out` is not an --input, the --tokenizer or a file in an input directory.
void check_import_outputs(const std::string& out, const ImportOptions& options);

// The whole file, gunzipped when it is gzip (zlib reads plain files unchanged); IoError when it
// is not a regular file or inflates beyond inflate_limit(its size, max_ratio).
std::string read_maybe_gz(const std::string& path, std::uint64_t max_ratio);

struct IdxArray {
  std::vector<std::int64_t> dims;
  std::string data;  // unsigned bytes, row-major
};
// IDX: magic 0x00 0x00 <type> <ndims>, big-endian int32 dims, then the data. Type 0x08 only.
IdxArray parse_idx(const std::string& bytes, const std::string& path);

struct CsvTable {
  std::int64_t rows = 0, columns = 0;
  std::vector<double> values;  // row-major
  bool had_header = false;
};
// Numbers separated by commas; a first line that is not all numbers is a header.
CsvTable parse_csv(const std::string& text, const std::string& path);

struct NpyArray {
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> shape;
  std::string data;  // little-endian, C order
};
// .npy versions 1-3, little-endian or byte-sized dtypes, C order.
NpyArray parse_npy(const std::string& bytes, const std::string& path);

}  // namespace cohort::data::parse

namespace cohort::data {

// Every importer's provenance: spec.source = "what: file file ...", and each file's checksum.
void record_sources(WriterSpec& spec, const std::string& what,
                    const std::vector<std::string>& files);

}  // namespace cohort::data
