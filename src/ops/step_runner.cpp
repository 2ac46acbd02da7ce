#include "cohort/ops/step_runner.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "cohort/error.hpp"
#include "cohort/io/files.hpp"

namespace cohort::ops {
namespace {

constexpr int kForwarded[] = {SIGUSR1, SIGUSR2, SIGTERM, SIGINT, SIGHUP, SIGXCPU};
constexpr std::chrono::seconds kKillAfter{10};

[[noreturn]] void exec_child(const std::vector<std::string>& argv, const sigset_t& previous,
                             int child_stderr) {
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  if (child_stderr >= 0) dup2(child_stderr, STDERR_FILENO);
  std::vector<char*> c_argv;
  for (const auto& word : argv) c_argv.push_back(const_cast<char*>(word.c_str()));
  c_argv.push_back(nullptr);
  execvp(c_argv[0], c_argv.data());
  std::fprintf(stderr, "cohort: error: supervise: cannot run %s: %s\n", c_argv[0],
               std::strerror(errno));
  std::_Exit(127);
}

timespec to_timespec(std::chrono::steady_clock::duration left) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
  return {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
}

// A signal sent to this process (kill, scancel, Slurm's --signal): passed on. One the terminal
// sent (Ctrl-C: si_code SI_KERNEL) reached the step's own process group already; passing it again
// would be a second Ctrl-C, which mpirun takes as "abort now".
void pass_on(int signal, const siginfo_t& info, pid_t child, bool stop_as_usr1, bool& stopping) {
  const bool stop = signal != SIGUSR1 && signal != SIGUSR2;
  const int passed = stop && stop_as_usr1 && !stopping ? SIGUSR1 : signal;
  stopping = stopping || stop;
  if (info.si_code <= 0) kill(child, passed);  // the step may have ended: none to pass to
}

}  // namespace

std::optional<int> read_step_mark(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, error))) return std::nullopt;
  std::string text;
  try {
    text = io::read_small_file(path, 4);
  } catch (const IoError& e) {  // not a mark (a link, a FIFO, too long): srun's end stands
    static bool said = false;   // polled every 200 ms: said once
    if (!said) std::fprintf(stderr, "cohort: warning: %s\n", e.what());
    said = true;
    return std::nullopt;
  }
  if (text.size() != 4 || text[3] != '\n') return std::nullopt;
  int code = 0;
  for (int i = 0; i < 3; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    code = code * 10 + (text[i] - '0');
  }
  if (code < 1 || code > 255) return std::nullopt;  // no exit code, let alone a failure's
  return code;
}

StepEnd run_forwarding(const std::vector<std::string>& argv, std::chrono::seconds timeout,
                       UniqueFd child_stderr, bool stop_as_usr1, const std::string& failed_mark) {
  sigset_t set, previous;
  sigemptyset(&set);
  for (const int signal : kForwarded) sigaddset(&set, signal);
  sigaddset(&set, SIGCHLD);
  COHORT_CHECK(sigprocmask(SIG_BLOCK, &set, &previous) == 0, EnvironmentError,
               "sigprocmask failed: ", std::strerror(errno));
  std::fflush(nullptr);
  // Ranks under mpirun write to a pseudo-terminal whatever mpirun's own output is: tell the
  // monitor's console (docs/monitoring.md) what the user's is.
  setenv("COHORT_STDOUT_TTY", isatty(STDOUT_FILENO) ? "1" : "0", 0);
  const pid_t child = fork();
  COHORT_CHECK(child >= 0, EnvironmentError, "fork failed: ", std::strerror(errno));
  if (child == 0) exec_child(argv, previous, child_stderr.get());
  child_stderr.reset();  // the child's alone: its reader sees the end when the child's is closed
  using Clock = std::chrono::steady_clock;
  auto deadline = timeout.count() > 0 ? Clock::now() + timeout : Clock::time_point::max();
  StepEnd end;
  int status = 0;
  bool stopping = false;  // a stop signal was passed on already
  while (true) {
    siginfo_t info{};
    const auto wake = failed_mark.empty() || end.marked
                          ? deadline
                          : std::min(deadline, Clock::now() + std::chrono::milliseconds(200));
    const timespec left = to_timespec(std::max(wake - Clock::now(), Clock::duration(0)));
    const int signal = wake == Clock::time_point::max() ? sigwaitinfo(&set, &info)
                                                        : sigtimedwait(&set, &info, &left);
    if (signal < 0 && errno == EAGAIN && Clock::now() < deadline) {  // the poll of the mark
      end.marked = read_step_mark(failed_mark);
      if (end.marked) deadline = std::min(deadline, Clock::now() + kMarkGrace);
      continue;
    }
    if (signal < 0 && errno == EAGAIN) {  // the deadline (or the grace): end the step, for good
      // A failed step's srun waits for tasks it cannot reach: SIGKILL, no second grace.
      kill(child, end.timed_out || end.marked ? SIGKILL : SIGTERM);
      end.timed_out = !end.marked || end.timed_out;
      deadline = Clock::now() + kKillAfter;
      continue;
    }
    if (signal < 0) continue;  // EINTR
    if (signal != SIGCHLD) {
      pass_on(signal, info, child, stop_as_usr1, stopping);
      continue;
    }
    if (waitpid(child, &status, WNOHANG) == child) break;
  }
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  end.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return end;
}

}  // namespace cohort::ops
