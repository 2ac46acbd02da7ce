// One way out: the files a command writes, checked together before anything is written, and each
// written whole under a temporary name that only this process created.
//
// OutputPlan's protocol: a command names every file it reads (read()) and every file it will write
// (write()), then calls check() before it writes anything. check() refuses, as a UsageError (exit
// 2) naming the option and the path:
//   - an output that is the same file as an input or as another output: the same device and inode
//     once links are followed, or, for a file not there yet, the same place once its directory's
//     links are resolved (a command never overwrites what it reads); an input that is a directory
//     (shards, a checkpoint) holds inputs: its files and its step directories' files are inputs,
//     and a new file among them is refused too (it would be read or removed with them);
//   - an output that is a directory, a FIFO, a socket or a device, or a link to nothing;
//   - an output file whose directory does not exist or cannot be written.
// An output that is a symbolic link to a file is replaced by the new file, as mv(1) replaces it:
// the file it pointed to is left as it was.
//
// TemporaryFile's protocol: a writer takes one per output, creates path() exclusively (create(),
// or a library's own exclusive create followed by adopt()), writes it, and commit()s it, which
// renames it over the output. An existing file or link at the temporary name is never opened,
// truncated or removed: the create fails and says so. Destroyed uncommitted, it removes what this
// process created and nothing else. docs/testing-hostile-input.md, "Outputs".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cohort/io/files.hpp"
#include "cohort/io/unique_fd.hpp"

namespace cohort::io {

class OutputPlan {
 public:
  enum class Kind { kFile, kDirectory };

  // `label` names what gave the path ("--data", "model.file"); an input that does not exist is
  // left to the command's own reader to refuse, and an empty path (an option not given) is
  // skipped.
  OutputPlan& read(const std::string& path, std::string label);
  // A file the command writes (kFile), or a directory it fills with new files (kDirectory: an
  // existing directory is allowed, any other file is not).
  OutputPlan& write(const std::string& path, std::string label, Kind kind = Kind::kFile);
  void check() const;

 private:
  struct Entry {
    std::string path;
    std::string label;
    Kind kind = Kind::kFile;
  };
  void check_output(const Entry& out) const;

  std::vector<Entry> inputs_;
  std::vector<Entry> outputs_;
};

class TemporaryFile {
 public:
  // The temporary of `final_path`, beside it (a rename within one filesystem): "<final>.tmp-<pid>",
  // or "<final>.tmp-<pid>-<serial>" with the first serial whose name is free when a file of that
  // name is already there (a leftover of a killed run whose pid this one reuses: left alone, and
  // never in the way). Nothing is created yet.
  explicit TemporaryFile(std::string final_path);
  // The name a process `pid` gives its temporary of `final_path` at `serial` (a collective
  // writer's other ranks find rank 0's by it).
  static std::string name_for(const std::string& final_path, long pid, int serial);
  int serial() const { return serial_; }
  ~TemporaryFile();
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& final_path() const { return final_path_; }
  // Creates path() for writing (O_CREAT | O_EXCL | O_NOFOLLOW): an IoError when anything is
  // there already, which is left alone.
  UniqueFd create();
  // create(), then `text` written whole (commit() fsyncs it when durable).
  void write(std::string_view text);
  // A library created path() exclusively itself (HDF5's H5F_ACC_EXCL): it is ours to remove.
  void adopt() { created_ = true; }
  // Renames path() over final_path() (commit_file: durable unless asked otherwise).
  void commit(Durability durability = Durability::kDurable);
  // Removes path() now if this process created it (a failed write; the destructor does the same).
  void discard() noexcept;

 private:
  std::string final_path_;
  std::string path_;
  int serial_ = 0;
  bool created_ = false;
};

// A file a run keeps writing in its own directory over its life (metrics.jsonl, a TensorBoard
// event file), written in place by design. Opened without following a link (O_NOFOLLOW) and
// without blocking, regular files only: a link, a FIFO or a directory at the name is refused as
// an IoError and left as it was. kAppend creates the file or appends to it; kReplace writes a new
// file renamed over the regular file of that name (the run's own, from a run it replaces: never
// emptied in place, so a hard link to it elsewhere keeps what it held); kNew creates it, and
// refuses any file already there. Writes go straight to the file (write(2)).
class RunFile {
 public:
  enum class Mode { kAppend, kReplace, kNew };
  RunFile(std::string path, Mode mode);
  void write(std::string_view text);
  const std::string& path() const { return path_; }

 private:
  UniqueFd fd_;
  std::string path_;
};

}  // namespace cohort::io
