#include "data/tools/parsers.hpp"

#include "cohort/io/checksum.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>

#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/input.hpp"
#include "cohort/io/output.hpp"
#include "common/checked_math.hpp"

namespace cohort::data::parse {
namespace {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};

std::int64_t big_endian32(const std::string& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return static_cast<std::int64_t>(v);
}

DType npy_dtype(const std::string& type, const std::string& path) {
  static const std::pair<const char*, DType> kTypes[] = {
      {"|u1", DType::kUInt8},   {"<u1", DType::kUInt8},   {"<f2", DType::kFloat16},
      {"<f4", DType::kFloat32}, {"<f8", DType::kFloat64}, {"<i4", DType::kInt32},
      {"<i8", DType::kInt64}};
  for (const auto& [name, dtype] : kTypes) {
    if (type == name) return dtype;
  }
  COHORT_THROW(IoError, path, ": .npy dtype '", type, "' unsupported (u1 f2 f4 f8 i4 i8)");
}

// "(60000, 28, 28), }" -> {60000, 28, 28}; anything but a tuple of non-negative integers is
// refused (strtoll would take "-5" and stop quietly at "2x").
std::vector<std::int64_t> npy_shape(const std::string& value, const std::string& path) {
  const auto open = value.find('(');
  const auto close = value.find(')');
  COHORT_CHECK(open != std::string::npos && close != std::string::npos && open < close, IoError,
               path, ": .npy header's 'shape' is not a tuple");
  const std::string text = value.substr(open + 1, close - open - 1);
  std::vector<std::int64_t> shape;
  std::size_t at = 0;
  while (at < text.size()) {
    at = text.find_first_not_of(" ", at);
    if (at == std::string::npos) break;
    std::int64_t dim = 0;
    const auto [end, error] = std::from_chars(text.data() + at, text.data() + text.size(), dim);
    COHORT_CHECK(error == std::errc() && dim >= 0, IoError, path,
                 ": .npy header's 'shape' has a dimension that is not an integer >= 0");
    shape.push_back(dim);
    at = static_cast<std::size_t>(end - text.data());
    at = text.find_first_not_of(" L", at);  // Python 2 wrote 60000L
    if (at == std::string::npos) break;
    COHORT_CHECK(text[at] == ',', IoError, path, ": .npy header's 'shape' is malformed");
    ++at;
  }
  COHORT_CHECK(shape.size() <= 32, IoError, path, ": .npy 'shape' has more than 32 dimensions");
  return shape;
}

}  // namespace

void check_import_outputs(const std::string& out, const ImportOptions& options) {
  io::OutputPlan plan;
  for (const auto& input : options.inputs) plan.read(input, "--input");
  plan.read(options.tokenizer, "--tokenizer").write(out, "--out").check();
}

namespace {

// A file from outside read in blocks, gunzipped when it is gzip, never beyond inflate_limit.
class BlockReader {
 public:
  BlockReader(const std::string& path, std::uint64_t max_ratio)
      : path_(path), max_ratio_(max_ratio) {
    const auto source = io::InputFile::open(path, std::numeric_limits<std::int64_t>::max());
    limit_ = inflate_limit(static_cast<std::uint64_t>(source.size()), max_ratio);
    // zlib reads the descriptor that was checked (its own copy: gzclose closes it).
    const int fd = ::fcntl(source.fd(), F_DUPFD_CLOEXEC, 0);
    COHORT_CHECK(fd >= 0, IoError, path, ": cannot open: ", std::strerror(errno));
    file_.reset(gzdopen(fd, "rb"));
    if (file_ == nullptr) ::close(fd);
    COHORT_CHECK(file_ != nullptr, IoError, path, ": cannot open: ", std::strerror(errno));
  }

  // The next block (empty at the end).
  std::string_view next() {
    const int got = gzread(file_.get(), buffer_.data(), static_cast<unsigned>(buffer_.size()));
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(file_.get(), &code);
      COHORT_THROW(IoError, path_, ": cannot read (corrupt gzip?): ", message ? message : "?");
    }
    read_ += static_cast<std::uint64_t>(got);
    COHORT_CHECK(read_ <= limit_, IoError, path_, ": decompresses to more than ", limit_,
                 " bytes (", max_ratio_,
                 " times its size: a gzip bomb? --max-inflate-ratio raises the bound)");
    return {buffer_.data(), static_cast<std::size_t>(got)};
  }

 private:
  std::string path_;
  std::uint64_t max_ratio_, limit_ = 0, read_ = 0;
  std::unique_ptr<gzFile_s, GzCloser> file_;
  std::vector<char> buffer_ = std::vector<char>(1 << 20);
};

// Where to cut `text` (longer than `at` > 0 bytes) to at most `at` bytes without splitting a
// UTF-8 sequence: back over up to 3 continuation bytes; a longer run (not UTF-8) is cut at `at`.
std::size_t utf8_cut(std::string_view text, std::size_t at) {
  std::size_t cut = at;
  while (cut > 0 && at - cut < 4 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return cut > 0 && at - cut < 4 ? cut : at;
}

}  // namespace

std::string read_maybe_gz(const std::string& path, std::uint64_t max_ratio) {
  BlockReader reader(path, max_ratio);
  std::string bytes;
  for (std::string_view block = reader.next(); !block.empty(); block = reader.next()) {
    bytes.append(block);
  }
  return bytes;
}

void for_each_line_piece(const std::string& path, std::uint64_t max_ratio, std::size_t max_piece,
                         const std::function<void(std::string_view, bool ends_line)>& take) {
  BlockReader reader(path, max_ratio);
  std::string line;   // the current line's bytes not handed on yet: fewer than max_piece
  bool open = false;  // a line has begun and not ended
  for (std::string_view block = reader.next(); !block.empty(); block = reader.next()) {
    while (!block.empty()) {
      const std::size_t newline = block.find('\n');
      const std::size_t end = newline == std::string_view::npos ? block.size() : newline;
      std::string_view part = block.substr(0, end);
      open = true;
      while (line.size() + part.size() > max_piece) {  // whole pieces, cut from line + part
        // Up to 3 bytes past max_piece, to see where the character at the cut ends.
        const std::size_t taken =
            std::min(part.size(), max_piece + 3 - std::min(line.size(), max_piece + 3));
        line.append(part.substr(0, taken));
        part.remove_prefix(taken);
        const std::size_t cut = utf8_cut(line, max_piece);  // line.size() > max_piece here
        take(std::string_view(line).substr(0, cut), false);
        line.erase(0, cut);
      }
      line.append(part);
      if (newline == std::string_view::npos) break;
      take(line, true);
      line.clear();
      open = false;
      block.remove_prefix(newline + 1);
    }
  }
  if (open) take(line, true);
}

void parse_labelled_lines(
    const std::string& path, std::uint64_t max_ratio, std::size_t max_piece,
    const std::function<void(std::string_view, std::vector<std::int32_t>&)>& encode,
    const std::function<void(std::vector<std::int32_t>&)>& end_line,
    std::vector<LabelledExample>& examples) {
  std::size_t line = 0;
  bool starts = true;  // the next piece starts a line
  LabelledExample current;
  for_each_line_piece(path, max_ratio, max_piece, [&](std::string_view piece, bool ends_line) {
    if (ends_line && !piece.empty() && piece.back() == '\r') piece.remove_suffix(1);
    if (starts) {
      ++line;
      if (ends_line && piece.empty()) return;
      const std::size_t tab = piece.find('\t');
      COHORT_CHECK(
          tab != std::string_view::npos && tab > 0, IoError, path, ":", line,
          ": expected 'label<TAB>text'",
          ends_line ? std::string()
                    : " (the tab within the line's first " + std::to_string(max_piece) + " bytes)");
      current.label = std::string(piece.substr(0, tab));
      piece.remove_prefix(tab + 1);
      starts = false;
    }
    encode(piece, current.tokens);
    if (!ends_line) return;
    end_line(current.tokens);
    examples.push_back(std::move(current));
    current = LabelledExample{};
    starts = true;
  });
}

IdxArray parse_idx(const std::string& bytes, const std::string& path) {
  COHORT_CHECK(bytes.size() >= 4 && bytes[0] == 0 && bytes[1] == 0, IoError, path,
               ": not an IDX file (bad magic)");
  COHORT_CHECK(static_cast<unsigned char>(bytes[2]) == 0x08, IoError, path, ": IDX element type 0x",
               std::hex, static_cast<int>(bytes[2]), " is not unsigned byte (0x08)");
  const int ndims = static_cast<unsigned char>(bytes[3]);
  COHORT_CHECK(ndims >= 1 && bytes.size() >= 4 + 4u * ndims, IoError, path,
               ": IDX header truncated");
  IdxArray array;
  for (int d = 0; d < ndims; ++d) array.dims.push_back(big_endian32(bytes, 4 + 4u * d));
  const std::size_t offset = 4 + 4u * ndims;
  // Checked: dimensions whose product wraps must not match a small file by accident.
  const auto numel = checked::product(array.dims);
  COHORT_CHECK(numel && static_cast<std::uint64_t>(*numel) == bytes.size() - offset, IoError, path,
               ": IDX header dimensions ", shape_text(array.dims), " do not match the ",
               bytes.size() - offset, " bytes of data in the file");
  array.data = bytes.substr(offset);
  return array;
}

CsvTable parse_csv(const std::string& text, const std::string& path) {
  CsvTable table;
  std::size_t line_start = 0;
  std::int64_t line_number = 0;
  while (line_start < text.size()) {
    std::size_t line_end = text.find('\n', line_start);
    if (line_end == std::string::npos) line_end = text.size();
    std::string line = text.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::vector<double> row;
    bool numeric = true;
    std::size_t field_start = 0;
    while (field_start <= line.size()) {
      std::size_t comma = line.find(',', field_start);
      if (comma == std::string::npos) comma = line.size();
      const std::string field = line.substr(field_start, comma - field_start);
      char* end = nullptr;
      const double value = std::strtod(field.c_str(), &end);
      numeric = numeric && end != field.c_str() &&
                std::string(end).find_first_not_of(" \t") == std::string::npos;
      row.push_back(value);
      field_start = comma + 1;
    }
    if (!numeric && table.rows == 0 && !table.had_header) {
      table.had_header = true;
      continue;
    }
    COHORT_CHECK(numeric, IoError, path, ":", line_number, ": a field is not a number");
    if (table.rows == 0) table.columns = static_cast<std::int64_t>(row.size());
    COHORT_CHECK(static_cast<std::int64_t>(row.size()) == table.columns, IoError, path, ":",
                 line_number, ": ", row.size(), " fields, expected ", table.columns);
    table.values.insert(table.values.end(), row.begin(), row.end());
    ++table.rows;
  }
  COHORT_CHECK(table.rows > 0, IoError, path, ": no data rows");
  return table;
}

NpyArray parse_npy(const std::string& bytes, const std::string& path) {
  COHORT_CHECK(bytes.size() >= 10 && bytes.compare(0, 6, "\x93NUMPY") == 0, IoError, path,
               ": not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  COHORT_CHECK(major >= 1 && major <= 3, IoError, path, ": .npy version ", major, " unsupported");
  std::size_t header_len = static_cast<unsigned char>(bytes[8]) |
                           (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
  std::size_t offset = 10;
  if (major >= 2) {
    COHORT_CHECK(bytes.size() >= 12, IoError, path, ": .npy header truncated");
    header_len |= (static_cast<std::size_t>(static_cast<unsigned char>(bytes[10])) << 16) |
                  (static_cast<std::size_t>(static_cast<unsigned char>(bytes[11])) << 24);
    offset = 12;
  }
  COHORT_CHECK(bytes.size() >= offset + header_len, IoError, path, ": .npy header truncated");
  const std::string header = bytes.substr(offset, header_len);
  const auto value_of = [&](const std::string& key) {
    const auto at = header.find("'" + key + "'");
    COHORT_CHECK(at != std::string::npos, IoError, path, ": .npy header lacks '", key, "'");
    return header.substr(header.find(':', at) + 1);
  };
  const std::string descr = value_of("descr");
  const auto quote = descr.find('\'');
  const std::string type = descr.substr(quote + 1, descr.find('\'', quote + 1) - quote - 1);
  COHORT_CHECK(value_of("fortran_order").find("False") != std::string::npos, IoError, path,
               ": Fortran-ordered arrays are not supported (save with np.ascontiguousarray)");
  NpyArray array;
  array.dtype = npy_dtype(type, path);
  array.shape = npy_shape(value_of("shape"), path);
  const auto numel = checked::product(array.shape);
  const auto data_bytes =
      numel ? checked::mul(*numel, static_cast<std::int64_t>(dtype_size(array.dtype))) : numel;
  const std::size_t file_data = bytes.size() - offset - header_len;
  COHORT_CHECK(data_bytes && static_cast<std::uint64_t>(*data_bytes) == file_data, IoError, path,
               ": .npy shape ", shape_text(array.shape), " does not match the ", file_data,
               " bytes of data in the file");
  array.data = bytes.substr(offset + header_len);
  return array;
}

}  // namespace cohort::data::parse

namespace cohort::data {

void record_sources(WriterSpec& spec, const std::string& what,
                    const std::vector<std::string>& files) {
  spec.source = what + ":";
  for (const auto& file : files) {
    spec.source += " " + file;
    spec.source_checksum += (spec.source_checksum.empty() ? "" : " ") + io::file_checksum(file);
  }
}

}  // namespace cohort::data
