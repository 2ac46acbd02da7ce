#include "cohort/io/files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "cohort/error.hpp"
#include "cohort/io/input.hpp"
#include "cohort/io/output.hpp"
#include "cohort/io/unique_fd.hpp"

namespace cohort::io {
namespace {

// The io module's fault point (tests only): COHORT_FAULT_IO=rename:<text> fails every rename
// whose target contains <text>. Read at each rename, so a test can arm it in-process.
bool rename_fault(const std::string& to) {
  const char* fault = std::getenv("COHORT_FAULT_IO");
  if (fault == nullptr) return false;
  const std::string spec = fault;
  const std::string kind = "rename:";
  return spec.rfind(kind, 0) == 0 && spec.size() > kind.size() &&
         to.find(spec.substr(kind.size())) != std::string::npos;
}

std::string parent_of(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

void write_all(const std::string& path, std::string_view text, bool sync) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  COHORT_CHECK(fd.get() >= 0, IoError, path, ": cannot create: ", std::strerror(errno));
  write_fully(fd.get(), text, path);
  COHORT_CHECK(!sync || ::fsync(fd.get()) == 0, IoError, path,
               ": fsync failed: ", std::strerror(errno));
}

}  // namespace

void write_fully(int fd, std::string_view text, const std::string& path) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    COHORT_CHECK(n > 0 || errno == EINTR, IoError, path, ": write failed: ", std::strerror(errno));
    if (n > 0) done += static_cast<std::size_t>(n);
  }
}

void write_file_synced(const std::string& path, std::string_view text) {
  write_all(path, text, /*sync=*/true);
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
  if (rename_fault(to)) {
    COHORT_THROW(IoError, "cannot rename ", from, " to ", to, ": ", std::strerror(EIO),
                 " (injected by COHORT_FAULT_IO)");
  }
  COHORT_CHECK(std::rename(from.c_str(), to.c_str()) == 0, IoError, "cannot rename ", from, " to ",
               to, ": ", std::strerror(errno));
}

std::string describe_path(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode)) return "a regular file";
    if (S_ISDIR(st.st_mode)) return "a directory";
    if (S_ISFIFO(st.st_mode)) return "a FIFO";
    if (S_ISSOCK(st.st_mode)) return "a socket";
    return "a device";
  }
  const int error = errno;
  if (error == ELOOP) return "a loop of symbolic links";
  struct stat link {};
  if (error == ENOENT && ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    std::string target(4096, '\0');
    const ssize_t n = ::readlink(path.c_str(), target.data(), target.size() - 1);
    target.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    return "a link to " + target + ", which does not exist";
  }
  if (error == ENOENT) return "no such file or directory";
  return std::strerror(error);
}

std::string read_small_file(const std::string& path, std::size_t limit) {
  return InputFile::open(path, static_cast<std::int64_t>(limit)).read_all();
}

void commit_file(const std::string& temporary, const std::string& path, Durability durability) {
  try {
    if (durability == Durability::kDurable) fsync_file(temporary);
    rename_path(temporary, path);
  } catch (const IoError&) {
    std::remove(temporary.c_str());  // the error below says what failed; the old file stays
    throw;
  }
  if (durability == Durability::kDurable) fsync_directory(parent_of(path));
}

void write_file_atomically(const std::string& path, std::string_view text, Durability durability) {
  TemporaryFile temporary(path);  // created exclusively; removed unless committed
  temporary.write(text);          // commit fsyncs it when durable
  temporary.commit(durability);
}

std::int64_t file_bytes(const std::string& path) {
  std::error_code error;
  const auto bytes = std::filesystem::file_size(path, error);
  COHORT_CHECK(!error, IoError, path, ": ", error.message());
  return static_cast<std::int64_t>(bytes);
}

void read_at(int fd, std::int64_t offset, void* out, std::size_t bytes, const std::string& path) {
  auto* at = static_cast<char*>(out);
  while (bytes > 0) {
    const ssize_t got = ::pread(fd, at, bytes, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    COHORT_CHECK(got > 0, IoError, path, ": cannot read at ", offset, ": ",
                 got == 0 ? "the file ends there (truncated?)" : std::strerror(errno));
    at += got;
    offset += got;
    bytes -= static_cast<std::size_t>(got);
  }
}

void make_shared_directory(const std::string& path) {
  if (::mkdir(path.c_str(), 0777) == 0) return;
  const int error = errno;
  struct stat st {};
  COHORT_CHECK(error == EEXIST && ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode), IoError,
               path, ": cannot create directory: ",
               error == EEXIST ? "something that is not a directory is there (left alone)"
                               : std::strerror(error));
}

void make_directories(const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  COHORT_CHECK(!error, IoError, path, ": cannot create directory: ", error.message());
}

}  // namespace cohort::io
