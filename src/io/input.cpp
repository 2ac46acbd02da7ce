#include "cohort/io/input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cohort/io/files.hpp"

namespace cohort::io {
InputFile::InputFile(UniqueFd fd, std::int64_t size, std::string path)
    : fd_(std::move(fd)), size_(size), path_(std::move(path)) {}

InputFile InputFile::try_open(const std::string& path, std::int64_t max_bytes,
                              std::string& problem) {
  // O_NONBLOCK: a FIFO opens at once instead of waiting for a writer, and is refused below.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) {
    const int error = errno;
    // describe_path tells a dangling link and a loop from a missing file.
    problem = error == ENOENT || error == ELOOP ? describe_path(path) : std::strerror(error);
    return InputFile(UniqueFd(), 0, path);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    problem = std::string("cannot stat: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    problem = describe_path(path) + ", not a regular file";  // the error path only
  } else if (st.st_size > max_bytes) {
    problem = std::to_string(st.st_size) + " bytes, larger than the limit of " +
              std::to_string(max_bytes);
  } else {
    // Reads block as usual from here on (a regular file ignores O_NONBLOCK, a library may not).
    const int flags = ::fcntl(fd.get(), F_GETFL);
    if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    return InputFile(std::move(fd), st.st_size, path);
  }
  return InputFile(UniqueFd(), 0, path);
}

std::string InputFile::read_all() const {
  // One byte more than the size: a file that grew since it was opened is refused, not cut.
  std::string text(static_cast<std::size_t>(size_) + 1, '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n =
        ::pread(fd_.get(), text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    COHORT_CHECK(n >= 0, IoError, path_, ": read failed: ", std::strerror(errno));
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  COHORT_CHECK(done == static_cast<std::size_t>(size_), IoError, path_,
               ": changed while being read");
  text.resize(done);
  return text;
}

std::string InputFile::fd_path() const { return "/proc/self/fd/" + std::to_string(fd_.get()); }

}  // namespace cohort::io
