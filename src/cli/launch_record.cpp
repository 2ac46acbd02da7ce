#include "launch_record.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cohort/error.hpp"
#include "cohort/io/unique_fd.hpp"

namespace cohort::cli {
namespace {

constexpr char kPrefix[] = "cohort-launch-";
constexpr char kExitFile[] = "exit";
constexpr char kSaidPrefix[] = "said-";
constexpr char kTemporaryPrefix[] = "tmp-";

// The launch directory this rank may write to: the variable's, when it names a directory of
// this user, private, made by a launcher (its name); empty otherwise.
std::string launch_dir() {
  const char* value = std::getenv(kLaunchDirVariable);
  if (value == nullptr || value[0] != '/') return {};
  const std::string dir(value);
  const auto slash = dir.rfind('/');
  if (dir.compare(slash + 1, sizeof kPrefix - 1, kPrefix) != 0) return {};
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 077) != 0) {
    return {};
  }
  return dir;
}

// Creates dir/name exclusively: true if this call made it (or cannot tell: print anyway).
// Creates dir/name holding `text`, atomically: written to a file of this process first, then
// linked to the name (link(2) fails if the name exists), so that no reader sees it empty.
bool create_exclusive(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string temporary =
      dir + "/" + kTemporaryPrefix + std::to_string(getpid()) + "-" + name;
  {
    const UniqueFd fd(
        ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.get() < 0) return true;  // cannot tell: say it (the protocol only removes duplicates)
    // A short write leaves a record the launcher cannot read: it then reports mpirun's own code.
    const ssize_t written = ::write(fd.get(), text.data(), text.size());
    static_cast<void>(written);
  }
  const int linked = ::link(temporary.c_str(), (dir + "/" + name).c_str());
  const int error = errno;
  ::unlink(temporary.c_str());
  return linked == 0 || error != EEXIST;
}

std::string fnv1a_hex(const std::string& text) {
  std::uint64_t hash = 1469598103934665603ULL;
  for (const unsigned char c : text) hash = (hash ^ c) * 1099511628211ULL;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(hash));
  return out;
}

}  // namespace

LaunchRecord::LaunchRecord() {
  const char* tmp = std::getenv("TMPDIR");
  const std::string pattern =
      std::string(tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp") + "/" + kPrefix + "XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  COHORT_CHECK(mkdtemp(name.data()) != nullptr, EnvironmentError, "cohort launch: cannot make ",
               name.data(), " ($TMPDIR): ", std::strerror(errno));
  path_ = name.data();
  setenv(kLaunchDirVariable, path_.c_str(), 1);
}

LaunchRecord::~LaunchRecord() {
  unsetenv(kLaunchDirVariable);
  DIR* dir = opendir(path_.c_str());
  if (dir != nullptr) {
    while (const dirent* entry = readdir(dir)) {
      const std::string name = entry->d_name;
      if (name == kExitFile || name.rfind(kSaidPrefix, 0) == 0 ||
          name.rfind(kTemporaryPrefix, 0) == 0) {
        unlink((path_ + "/" + name).c_str());
      }
    }
    closedir(dir);
  }
  rmdir(path_.c_str());  // left in place if something else was put there
}

std::optional<int> LaunchRecord::first_exit() const {
  const UniqueFd fd(::open((path_ + "/" + kExitFile).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) return std::nullopt;
  char text[8] = {};
  const ssize_t n = ::read(fd.get(), text, sizeof text - 1);
  if (n <= 0) return std::nullopt;
  char* end = nullptr;
  const long code = std::strtol(text, &end, 10);
  if (end == text || code <= 0 || code > 255) return std::nullopt;
  return static_cast<int>(code);
}

// This process's rank in its launch (the launchers' variables), or its pid: a claim holds it, so
// that the same rank saying a line again (a script running two commands) prints it again.
std::string rank_id() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(name)) return std::string("rank ") + value;
  }
  return "pid " + std::to_string(getpid());
}

bool claim_error_line(const std::string& line) {
  const std::string dir = launch_dir();
  if (dir.empty()) return true;
  const std::string name = kSaidPrefix + fnv1a_hex(line);
  const std::string me = rank_id();
  if (create_exclusive(dir, name, me)) return true;
  // Claimed already: by another rank (printed there), or by this one before (print again).
  const UniqueFd fd(::open((dir + "/" + name).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) return true;
  char text[64] = {};
  const ssize_t n = ::read(fd.get(), text, sizeof text - 1);
  return n > 0 && std::string(text, static_cast<std::size_t>(n)) == me;
}

void record_exit_code(int code) {
  const std::string dir = launch_dir();
  if (code != 0 && !dir.empty()) create_exclusive(dir, kExitFile, std::to_string(code));
}

}  // namespace cohort::cli
