#include "cohort/io/output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "cohort/error.hpp"

namespace cohort::io {
namespace {

// What makes two paths one file: the same device and inode when the file is there (links
// followed), else the same place once the directory's links are resolved.
struct Identity {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  std::string place;
};

// `path` without trailing slashes ("parts/" is "parts"; "/" stays).
std::string trimmed(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

std::string directory_of(const std::string& path) {
  const std::string parent = std::filesystem::path(trimmed(path)).parent_path().string();
  return parent.empty() ? "." : parent;
}

Identity identity_of(const std::string& path) {
  Identity id;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.device = st.st_dev;
    id.inode = st.st_ino;
  }
  std::error_code error;
  const auto directory = std::filesystem::canonical(directory_of(path), error);
  const auto name = std::filesystem::path(trimmed(path)).filename();
  id.place = error ? trimmed(path) : (directory / name).lexically_normal().string();
  return id;
}

// Whether `place` (a resolved path, Identity::place) is among what a reader of the directory
// `input` reads: a file directly in it (a dataset's shards are its top-level files), or a file
// of a checkpoint's step directory in it ("step-*", removed whole by retention). Deeper places
// (a run directory kept inside a dataset's) are not.
bool read_with(const std::string& place, const std::string& input) {
  std::error_code error;
  const auto directory = std::filesystem::canonical(input, error);
  if (error) return false;
  const std::filesystem::path parent = std::filesystem::path(place).parent_path();
  return parent == directory ||
         (parent.parent_path() == directory && parent.filename().string().rfind("step-", 0) == 0);
}

bool same_file(const Identity& a, const Identity& b) {
  if (a.exists && b.exists) return a.device == b.device && a.inode == b.inode;
  return a.place == b.place;
}

// The files of an input directory (a dataset's shards, a checkpoint's steps), as inputs too: by
// device and inode, so that a hard or symbolic link to one of them is one of them. Two levels
// (shards; step directories' shards) and at most kMaxWalked entries are looked at: every rank
// checks before it starts, and a parallel filesystem's metadata server serves them all.
constexpr int kMaxWalked = 100000;

void add_files_below(const std::string& directory, std::vector<Identity>& ids) {
  std::error_code error;
  std::filesystem::recursive_directory_iterator it(
      directory, std::filesystem::directory_options::skip_permission_denied, error);
  int walked = 0;
  for (; !error && it != std::filesystem::recursive_directory_iterator() && walked < kMaxWalked;
       it.increment(error), ++walked) {
    if (it.depth() >= 1) it.disable_recursion_pending();
    struct stat st {};
    if (::stat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      ids.push_back({true, st.st_dev, st.st_ino, it->path().string()});
    }
  }
  if (walked == kMaxWalked || error) {  // said, not silent: the comparison is partial
    std::fprintf(
        stderr, "cohort: warning: %s: outputs compared with the first %d entries only (%s)\n",
        directory.c_str(), walked, error ? error.message().c_str() : "more entries than that");
  }
}

// Why the directory that will hold `path`'s temporary cannot, or "" when it can.
std::string directory_problem(const std::string& path) {
  const std::string directory = directory_of(path);
  struct stat st {};
  if (::stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    const std::string what = describe_path(directory);
    return "its directory " + directory +
           (what == "no such file or directory" ? " does not exist"
                                                : " is " + what + ", not a directory to write in");
  }
  if (::access(directory.c_str(), W_OK | X_OK) != 0) {
    return "its directory " + directory + " cannot be written: " + std::strerror(errno);
  }
  return {};
}

}  // namespace

OutputPlan& OutputPlan::read(const std::string& path, std::string label) {
  inputs_.push_back({path, std::move(label), Kind::kFile});
  return *this;
}

OutputPlan& OutputPlan::write(const std::string& path, std::string label, Kind kind) {
  outputs_.push_back({path, std::move(label), kind});
  return *this;
}

void OutputPlan::check_output(const Entry& out) const {
  COHORT_CHECK(!out.path.empty(), UsageError, out.label, ": an empty path");
  struct stat st {};
  const bool there = ::lstat(out.path.c_str(), &st) == 0;
  if (there && S_ISLNK(st.st_mode) && ::stat(out.path.c_str(), &st) != 0) {
    COHORT_THROW(UsageError, out.path, ": ", out.label, ": ", describe_path(out.path),
                 "; name the file to write, not a link to nothing");
  }
  if (out.kind == Kind::kFile) {
    COHORT_CHECK(!there || S_ISREG(st.st_mode), UsageError, out.path, ": ", out.label, ": ",
                 describe_path(out.path), ", not a file Cohort can replace");
  } else {
    COHORT_CHECK(!there || S_ISDIR(st.st_mode), UsageError, out.path, ": ", out.label, ": ",
                 describe_path(out.path), ", not a directory to write in");
  }
  if (out.kind == Kind::kFile) {  // a new directory's parents are made as mkdir -p makes them
    const std::string problem = directory_problem(out.path);
    COHORT_CHECK(problem.empty(), UsageError, out.path, ": ", out.label, ": ", problem);
  }
}

void OutputPlan::check() const {
  std::vector<Identity> ids;
  for (const auto& out : outputs_) {
    check_output(out);
    ids.push_back(identity_of(out.path));
  }
  for (const auto& in : inputs_) {
    if (in.path.empty()) continue;
    std::vector<Identity> inputs{identity_of(in.path)};
    std::error_code error;
    const bool directory = std::filesystem::is_directory(in.path, error);
    if (directory) add_files_below(in.path, inputs);
    for (std::size_t i = 0; i < outputs_.size(); ++i) {
      for (const auto& input : inputs) {
        const bool below_it = &input != &inputs.front();
        COHORT_CHECK(!same_file(ids[i], input), UsageError, outputs_[i].path, ": ",
                     outputs_[i].label, " is the same file as ", in.label, " (",
                     below_it ? input.place : in.path,
                     "): a command never writes over what it reads; write the output elsewhere");
      }
      // A new file among an input directory's (a dataset's shards, a checkpoint's step) would be
      // read as one of them, or removed with them.
      COHORT_CHECK(
          !directory || outputs_[i].kind != Kind::kFile || !read_with(ids[i].place, in.path),
          UsageError, outputs_[i].path, ": ", outputs_[i].label, " is inside ", in.label,
          " (the directory ", in.path,
          "), which the command reads whole; write the output elsewhere");
    }
  }
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      // Two directories may be one (event files beside the run's files): their files differ.
      const bool both_directories =
          outputs_[i].kind == Kind::kDirectory && outputs_[j].kind == Kind::kDirectory;
      COHORT_CHECK(both_directories || !same_file(ids[i], ids[j]), UsageError, outputs_[i].path,
                   ": ", outputs_[i].label, " is the same file as ", outputs_[j].label, " (",
                   outputs_[j].path, "): give each output its own name");
    }
  }
}

std::string TemporaryFile::name_for(const std::string& final_path, long pid, int serial) {
  return final_path + ".tmp-" + std::to_string(pid) +
         (serial == 0 ? std::string() : "-" + std::to_string(serial));
}

TemporaryFile::TemporaryFile(std::string final_path) : final_path_(std::move(final_path)) {
  constexpr int kSerials = 1000;  // leftovers of as many killed runs of this pid
  struct stat st {};
  for (;; ++serial_) {  // the last serial's name even when taken: create() then says so
    path_ = name_for(final_path_, ::getpid(), serial_);
    if (::lstat(path_.c_str(), &st) != 0 || serial_ + 1 == kSerials) break;
  }
}

TemporaryFile::~TemporaryFile() { discard(); }

UniqueFd TemporaryFile::create() {
  UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  COHORT_CHECK(fd.get() >= 0, IoError, path_, ": cannot create the temporary of ", final_path_,
               ": ",
               errno == EEXIST ? "something is there already (left alone: remove it if it is a "
                                 "leftover of an earlier run)"
                               : std::strerror(errno));
  created_ = true;
  return fd;
}

void TemporaryFile::write(std::string_view text) {
  const UniqueFd fd = create();
  write_fully(fd.get(), text, path_);
}

void TemporaryFile::commit(Durability durability) {
  COHORT_CHECK(created_, IoError, path_, ": committed twice, or never created");
  created_ = false;  // commit_file removes the temporary itself when it fails
  commit_file(path_, final_path_, durability);
}

void TemporaryFile::discard() noexcept {
  if (!created_) return;
  created_ = false;
  std::remove(path_.c_str());  // ours: created exclusively by this process
}

RunFile::RunFile(std::string path, Mode mode) : path_(std::move(path)) {
  struct stat st {};
  const bool there = ::lstat(path_.c_str(), &st) == 0;
  COHORT_CHECK(!there || !S_ISLNK(st.st_mode), IoError, path_,
               ": cannot write: a symbolic link, which Cohort does not write through (left alone)");
  COHORT_CHECK(!there || S_ISREG(st.st_mode), IoError, path_,
               ": cannot write: ", describe_path(path_), ", not a regular file (left alone)");
  if (mode == Mode::kReplace) {      // a new file renamed over the old one: never emptied in place,
    TemporaryFile temporary(path_);  // so a hard link to it elsewhere keeps what it held
    fd_ = temporary.create();
    temporary.commit(Durability::kAtomic);
    return;
  }
  const int flags = O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
                    (mode == Mode::kNew ? O_EXCL : 0);
  fd_ = UniqueFd(::open(path_.c_str(), flags, 0644));
  if (fd_.get() < 0) {
    const int error = errno;  // a race with the checks above: say what is there now
    COHORT_THROW(IoError, path_, ": cannot write: ",
                 error == EEXIST ? "something is there already (left alone)"
                                 : describe_path(path_) + " (" + std::strerror(error) + ")");
  }
  COHORT_CHECK(::fstat(fd_.get(), &st) == 0 && S_ISREG(st.st_mode), IoError, path_,
               ": cannot write: ", describe_path(path_), ", not a regular file (left alone)");
  const int status = ::fcntl(fd_.get(), F_GETFL);
  if (status >= 0) ::fcntl(fd_.get(), F_SETFL, status & ~O_NONBLOCK);
}

void RunFile::write(std::string_view text) { write_fully(fd_.get(), text, path_); }

}  // namespace cohort::io
