// What the ranks of one `cohort launch` tell their launcher: which error lines were printed
// already, and the first rank's exit code.
//
// Protocol. The launcher makes a private directory (mkdtemp, 0700, `cohort-launch-XXXXXX` under
// $TMPDIR) and names it in COHORT_LAUNCH_DIR for the ranks it starts. A rank about to print an
// error line claims it first: it creates `said-<hash of the line>` with O_EXCL holding its rank,
// and prints only if it made the file (or made it before: the same rank saying it again), so a
// line that every rank has (a config error, "stopped to resume") is printed once. A rank that ends
// non-zero creates `exit` with O_EXCL holding its code: the first rank to end badly is the cause,
// whatever code mpirun or srun report (mpirun answers 1 when it was signalled itself, though every
// rank said 75). Without the variable, with a directory that is not one a launcher of this user
// made, or on another node (the directory is node-local), a rank prints and records as if alone:
// the protocol only ever removes duplicates.
#pragma once

#include <optional>
#include <string>

namespace cohort::cli {

inline constexpr char kLaunchDirVariable[] = "COHORT_LAUNCH_DIR";

// The launcher's side: owns the directory and removes it (and only the files of the protocol)
// on destruction. Never throws from the destructor.
class LaunchRecord {
 public:
  LaunchRecord();  // makes the directory and exports COHORT_LAUNCH_DIR; EnvironmentError if not
  ~LaunchRecord();
  LaunchRecord(const LaunchRecord&) = delete;
  LaunchRecord& operator=(const LaunchRecord&) = delete;

  const std::string& path() const { return path_; }
  std::optional<int> first_exit() const;  // the first rank's non-zero exit code, if one said so

 private:
  std::string path_;
};

// A rank's side. Whether this rank should print `line` (false: another rank of this launch
// printed the same line already).
bool claim_error_line(const std::string& line);
// Records a non-zero exit code for the launcher (the first one of the launch wins).
void record_exit_code(int code);

}  // namespace cohort::cli
