#include "data/tools/parsers.hpp"

#include "cohort/io/checksum.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

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

std::string read_maybe_gz(const std::string& path, std::uint64_t max_ratio) {
  const auto source = io::InputFile::open(path, std::numeric_limits<std::int64_t>::max());
  const std::uint64_t limit = inflate_limit(static_cast<std::uint64_t>(source.size()), max_ratio);
  // zlib reads the descriptor that was checked (its own copy: gzclose closes it).
  const int fd = ::fcntl(source.fd(), F_DUPFD_CLOEXEC, 0);
  COHORT_CHECK(fd >= 0, IoError, path, ": cannot open: ", std::strerror(errno));
  std::unique_ptr<gzFile_s, GzCloser> file(gzdopen(fd, "rb"));
  if (file == nullptr) ::close(fd);
  COHORT_CHECK(file != nullptr, IoError, path, ": cannot open: ", std::strerror(errno));
  std::string bytes;
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const int got = gzread(file.get(), buffer.data(), static_cast<unsigned>(buffer.size()));
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(file.get(), &code);
      COHORT_THROW(IoError, path, ": cannot read (corrupt gzip?): ", message ? message : "?");
    }
    if (got == 0) break;
    COHORT_CHECK(bytes.size() + static_cast<std::size_t>(got) <= limit, IoError, path,
                 ": decompresses to more than ", limit, " bytes (", max_ratio,
                 " times its size: a gzip bomb? --max-inflate-ratio raises the bound)");
    bytes.append(buffer.data(), static_cast<std::size_t>(got));
  }
  return bytes;
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
