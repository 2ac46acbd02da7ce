// Running a job step from the batch script's process (`cohort supervise`): the signals the batch
// shell receives (`#SBATCH --signal=B:USR1@N`, Slurm's SIGTERM, Ctrl-C) are passed on to the step.
//
// Signals are blocked before the fork and taken with sigtimedwait(), SIGCHLD included, so that
// none is lost between "the step still runs" and "forward this one"; the child unblocks them
// before exec. Only signals sent to this process are passed on: the terminal's (Ctrl-C) reach
// the step's process group by themselves.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "cohort/io/unique_fd.hpp"

namespace cohort::ops {

// A step's end: its exit code (128 + signal if killed), and whether it outlived the timeout.
struct StepEnd {
  int code = 0;
  bool timed_out = false;
  std::optional<int> marked;  // the exit code a failing rank left in `failed_mark`, if any
};

// Runs argv with the forwarded signals passed on. With a positive `timeout`, a step still running
// after it gets SIGTERM, and SIGKILL 10 s later. A valid `child_stderr` becomes the step's stderr
// (and is closed here once the step has it).
// `stop_as_usr1`: the first TERM, INT, HUP or XCPU is passed on as SIGUSR1, later ones as they
// are. mpirun ends its job at once on SIGTERM (its ranks get SIGKILL before a checkpoint is
// written, and it exits 1), but passes SIGUSR1 on to them, which Cohort's trainer takes as "stop
// with a checkpoint" and any other program, by default, as the end.
// `failed_mark`: the step's env::kStepFailedVariable file (env/step_marker.hpp), polled every
// 200 ms; once a rank left it, the step gets kMarkGrace to end by itself, then SIGKILL (srun
// would wait KillWait + 2 s for a task on a node it cannot reach). The caller removes it before
// and sets the variable.
StepEnd run_forwarding(const std::vector<std::string>& argv,
                       std::chrono::seconds timeout = std::chrono::seconds(0),
                       UniqueFd child_stderr = UniqueFd(), bool stop_as_usr1 = false,
                       const std::string& failed_mark = "");
inline constexpr std::chrono::milliseconds kMarkGrace{1500};

// The exit code (1..255) in a failed-step mark at `path` (io::read_small_file: a regular file of
// at most 4 bytes, "NNN\n"); nullopt when there is none or it holds no code. Never throws.
std::optional<int> read_step_mark(const std::string& path);

}  // namespace cohort::ops
