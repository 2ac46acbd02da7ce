#include "data/tools/parsers.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "cohort/error.hpp"

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

// "(60000, 28, 28), }" -> {60000, 28, 28}
std::vector<std::int64_t> npy_shape(std::string text) {
  text = text.substr(text.find('(') + 1, text.find(')') - text.find('(') - 1);
  std::vector<std::int64_t> shape;
  for (std::size_t at = 0; at < text.size();) {
    char* end = nullptr;
    const long long dim = std::strtoll(text.c_str() + at, &end, 10);
    if (end == text.c_str() + at) break;
    shape.push_back(dim);
    at = text.find(',', static_cast<std::size_t>(end - text.c_str()));
    if (at == std::string::npos) break;
    ++at;
  }
  return shape;
}

}  // namespace

std::string read_maybe_gz(const std::string& path) {
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
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
  std::int64_t numel = 1;
  for (int d = 0; d < ndims; ++d) {
    array.dims.push_back(big_endian32(bytes, 4 + 4u * d));
    numel *= array.dims.back();
  }
  const std::size_t offset = 4 + 4u * ndims;
  COHORT_CHECK(bytes.size() - offset == static_cast<std::size_t>(numel), IoError, path,
               ": IDX header promises ", numel, " bytes of data, file has ", bytes.size() - offset);
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
  array.shape = npy_shape(value_of("shape"));
  std::int64_t numel = 1;
  for (auto dim : array.shape) numel *= dim;
  const std::size_t data_bytes = static_cast<std::size_t>(numel) * dtype_size(array.dtype);
  COHORT_CHECK(bytes.size() - offset - header_len == data_bytes, IoError, path, ": .npy shape ",
               "promises ", data_bytes, " bytes of data, file has ",
               bytes.size() - offset - header_len);
  array.data = bytes.substr(offset + header_len);
  return array;
}

}  // namespace cohort::data::parse
