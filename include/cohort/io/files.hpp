// File operations every module shares, in one place: durable writes (a temporary, fsync, rename,
// fsync of the directory), size and directory helpers, and bounded reads of small files. Every
// failure is an IoError naming the file; a failed replace leaves the old file and no temporary.
//
// Fault injection (tests only; inert unless set): COHORT_FAULT_IO=rename:<text> makes every
// rename whose target path contains <text> fail with EIO, as a full or read-only filesystem
// would (docs/testing-hostile-input.md lists every fault point).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cohort::io {

enum class Durability {
  kDurable,  // fsync the file before the rename and the directory after: survives a crash
  kAtomic,   // rename only: readers see the old or the new file whole (files rewritten often)
};

// Replaces `path` with `text`: writes "<path>.tmp-<pid>" (an io::TemporaryFile: created
// exclusively, never through a link), renames it over `path`. On any failure the temporary is
// removed and the old file is left as it was.
void write_file_atomically(const std::string& path, std::string_view text,
                           Durability durability = Durability::kDurable);
// Moves a finished temporary file (closed by its writer) to `path` with the same guarantees;
// removes the temporary on failure.
void commit_file(const std::string& temporary, const std::string& path,
                 Durability durability = Durability::kDurable);

// write(2) of all of `text` to `fd` (a short write continues, EINTR retried); IoError naming
// `path`. The one write loop of every writer in io and its callers.
void write_fully(int fd, std::string_view text, const std::string& path);
// Writes `text` to `path` (truncating), then fsyncs it.
void write_file_synced(const std::string& path, std::string_view text);
// Reopens a closed file to fsync it (HDF5 closes its own descriptor).
void fsync_file(const std::string& path);
// fsync of a directory, so that renames and new entries in it are durable.
void fsync_directory(const std::string& path);
// rename(2) of a file or a directory; the IoError names both paths.
void rename_path(const std::string& from, const std::string& to);
// A regular file of at most `limit` bytes, read whole (InputFile: never blocks on a FIFO).
std::string read_small_file(const std::string& path, std::size_t limit);

// What `path` is, in words, for an error that must not say "no such file" of a directory or a
// FIFO: "a regular file", "a directory", "a FIFO", "a socket", "a device", "a link to T, which
// does not exist", "a loop of symbolic links", "no such file or directory", or the system's
// reason it cannot be looked at ("permission denied").
std::string describe_path(const std::string& path);

// Size in bytes.
std::int64_t file_bytes(const std::string& path);
// pread(2) of exactly `bytes` at `offset` (a short read continues; the end of the file or an
// error is an IoError naming `path`).
void read_at(int fd, std::int64_t offset, void* out, std::size_t bytes, const std::string& path);
// mkdir -p.
void make_directories(const std::string& path);
// `path` made as a directory (its parent must exist), or taken when it is one already (another
// rank made it): never a symbolic link or anything else at that name, which is refused (IoError)
// and left alone. For a directory several processes write their files into.
void make_shared_directory(const std::string& path);

}  // namespace cohort::io
