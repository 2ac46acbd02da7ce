#include "ckpt/files.hpp"

#include <sys/stat.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include "cohort/error.hpp"
#include "common/unique_fd.hpp"

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

void write_file_synced(const std::string& path, std::string_view text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  COHORT_CHECK(fd.get() >= 0, IoError, path, ": cannot create: ", std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    COHORT_CHECK(n > 0 || errno == EINTR, IoError, path, ": write failed: ", std::strerror(errno));
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  COHORT_CHECK(::fsync(fd.get()) == 0, IoError, path, ": fsync failed: ", std::strerror(errno));
}

void fsync_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  COHORT_CHECK(fd.get() >= 0, IoError, path, ": cannot reopen to fsync: ", std::strerror(errno));
  COHORT_CHECK(::fsync(fd.get()) == 0, IoError, path, ": fsync failed: ", std::strerror(errno));
}

void fsync_directory(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  COHORT_CHECK(fd.get() >= 0, IoError, path, ": cannot open directory: ", std::strerror(errno));
  COHORT_CHECK(::fsync(fd.get()) == 0, IoError, path, ": fsync failed: ", std::strerror(errno));
}

void rename_path(const std::string& from, const std::string& to) {
  COHORT_CHECK(std::rename(from.c_str(), to.c_str()) == 0, IoError, "cannot rename ", from, " to ",
               to, ": ", std::strerror(errno));
}

std::string read_small_file(const std::string& path, std::size_t limit) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  COHORT_CHECK(fd.get() >= 0, IoError, path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  COHORT_CHECK(::fstat(fd.get(), &st) == 0, IoError, path, ": cannot stat: ", std::strerror(errno));
  COHORT_CHECK(S_ISREG(st.st_mode), IoError, path, ": not a regular file");
  COHORT_CHECK(static_cast<std::uint64_t>(st.st_size) <= limit, IoError, path, ": ", st.st_size,
               " bytes, larger than the limit of ", limit);
  // Sized by the file, not the limit; one byte more shows a file that grew while read.
  std::string text(static_cast<std::size_t>(st.st_size) + 1, '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    COHORT_CHECK(n >= 0, IoError, path, ": read failed: ", std::strerror(errno));
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  COHORT_CHECK(done <= static_cast<std::size_t>(st.st_size), IoError, path,
               ": changed while being read");
  text.resize(done);
  return text;
}

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

std::uint64_t parse_checksum(const std::string& text) {
  const std::string prefix = "xxh3-64:";
  const bool hex = text.find_first_not_of("0123456789abcdef", prefix.size()) == std::string::npos;
  COHORT_CHECK(text.rfind(prefix, 0) == 0 && text.size() == prefix.size() + 16 && hex, IoError,
               "checkpoint: malformed checksum '", text, "'");
  return std::stoull(text.substr(prefix.size()), nullptr, 16);
}

data::DType storage_of(const std::string& dtype) {
  static const std::map<std::string, data::DType> kTypes = {
      {"float32", data::DType::kFloat32}, {"float64", data::DType::kFloat64},
      {"float16", data::DType::kFloat16}, {"bfloat16", data::DType::kUInt16},
      {"int64", data::DType::kInt64},     {"int32", data::DType::kInt32},
      {"uint8", data::DType::kUInt8},     {"bool", data::DType::kUInt8}};
  const auto it = kTypes.find(dtype);
  COHORT_CHECK(it != kTypes.end(), IoError, "checkpoint: unsupported dtype '", dtype, "'");
  return it->second;
}

}  // namespace cohort::ckpt
