// One way in for a file that comes from outside Cohort (a config, a dataset, an import source, a
// model or weights file, a transform, a tokenizer model, a ledger, a metrics file): opened once,
// without blocking (a FIFO never waits for a writer), checked to be a regular file no larger than
// the caller's bound, and read through that descriptor, so that what was checked is what is read.
// A refusal says what the path really is: "a FIFO", "a directory", "a device", "a link to T, which
// does not exist", "a loop of symbolic links", "no such file or directory", "permission denied".
//
// Libraries that open by name (HDF5, LibTorch, zlib) get fd_path(): /proc/self/fd/N names this
// open file, whatever the user's path points to by then. docs/testing-hostile-input.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cohort/error.hpp"
#include "cohort/io/unique_fd.hpp"

namespace cohort::io {

class InputFile {
 public:
  // Opens `path`, or throws Err "<path>: [<label>: ]<what it is>" (Err: the error the caller's
  // input maps to; IoError for data, exit 3; ConfigError for a file a setting names, exit 2).
  // `label` names what gave the path ("model.file", "--data"); empty when the path says enough.
  template <typename Err = IoError>
  static InputFile open(const std::string& path, std::int64_t max_bytes,
                        std::string_view label = {});

  int fd() const { return fd_.get(); }
  std::int64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // The whole file, from offset 0 (IoError when it is not size() bytes any more).
  std::string read_all() const;
  // "/proc/self/fd/N": a name for this very open file, for a library that opens by name.
  std::string fd_path() const;

 private:
  InputFile(UniqueFd fd, std::int64_t size, std::string path);
  // The open file, or an empty problem-free result with `problem` set to why not.
  static InputFile try_open(const std::string& path, std::int64_t max_bytes, std::string& problem);

  UniqueFd fd_;
  std::int64_t size_ = 0;
  std::string path_;
};

template <typename Err>
InputFile InputFile::open(const std::string& path, std::int64_t max_bytes, std::string_view label) {
  std::string problem;
  InputFile file = try_open(path, max_bytes, problem);
  COHORT_CHECK(problem.empty(), Err, path, ": ", label, label.empty() ? "" : ": ", problem);
  return file;
}

}  // namespace cohort::io
