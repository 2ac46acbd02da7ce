// Readers for the source formats `cohort data import` takes: gzip-or-plain files, IDX (the MNIST
// family), CSV of numbers, NumPy .npy. Each validates its input and throws IoError naming the file
// and what is wrong (never reads past the end of a buffer).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
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

// The longest piece of a line a text importer holds or gives a tokenizer at once: a longer line
// comes in pieces of at most this many bytes, each cut at a UTF-8 character boundary (the
// documented rule, docs/data.md, which tests/data/tokenizer.py's reference repeats).
inline constexpr std::size_t kMaxLinePiece = 64 * 1024;

// Reads the file as read_maybe_gz does, under the same bound, but in blocks: `take` gets each
// line (without its '\n') in pieces of at most max_piece bytes, the last with ends_line = true
// (an empty line: one empty piece). Neither the file nor a line is ever held whole.
void for_each_line_piece(const std::string& path, std::uint64_t max_ratio, std::size_t max_piece,
                         const std::function<void(std::string_view, bool ends_line)>& take);

// `import labelled-text`'s lines "label<TAB>text", read by for_each_line_piece: each non-empty
// line's label (up to its first tab, which must come within its first piece) and its text given
// to `encode` piece by piece (a trailing '\r' dropped), then to `end_line` once. IoError naming
// the file and line otherwise.
struct LabelledExample {
  std::string label;
  std::vector<std::int32_t> tokens;
};
void parse_labelled_lines(
    const std::string& path, std::uint64_t max_ratio, std::size_t max_piece,
    const std::function<void(std::string_view, std::vector<std::int32_t>&)>& encode,
    const std::function<void(std::vector<std::int32_t>&)>& end_line,
    std::vector<LabelledExample>& examples);

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
