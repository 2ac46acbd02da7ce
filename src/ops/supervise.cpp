#include "cohort/ops/supervise.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "cohort/env/environment.hpp"
#include "cohort/env/launch.hpp"
#include "cohort/env/step_marker.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/ops/decisions.hpp"
#include "cohort/ops/doctor.hpp"
#include "cohort/ops/step_runner.hpp"
#include "cohort/ops/supervision.hpp"
#include "cohort/slurm/job.hpp"
#include "cohort/slurm/restart_ledger.hpp"
#include "ops/restart_loop.hpp"

namespace cohort::ops {
namespace {

// A file of our own for the doctor's report, removed when done. Not an io::TemporaryFile: another
// process (the doctor's step) writes it, and it is read and removed here, never renamed.
class ReportFile {
 public:
  ReportFile() {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/cohort-preflight-XXXXXX";
    const int fd = ::mkstemp(path_.data());
    COHORT_CHECK(fd >= 0, EnvironmentError, path_, ": cannot create: ", std::strerror(errno));
    ::close(fd);
  }
  ~ReportFile() { ::unlink(path_.c_str()); }
  ReportFile(const ReportFile&) = delete;
  ReportFile& operator=(const ReportFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The doctor's report, or nullopt (said) when it wrote none that can be read.
std::optional<DoctorReport> read_report(const std::string& path, const StepEnd& end,
                                        const Say& say) {
  try {
    COHORT_CHECK(io::file_bytes(path) > 0, IoError, path, ": empty (cohort doctor exited ",
                 end.code, end.timed_out ? ", after slurm.preflight_timeout)" : ")");
    return read_doctor_report(path);
  } catch (const IoError& e) {  // said, not swallowed: training starts without the checks
    say(std::string("pre-flight: no report: ") + e.what() + "; training starts without it");
    return std::nullopt;
  }
}

}  // namespace

std::vector<std::string> step_argv(const StepCommand& command, const std::string& subcommand,
                                   const std::vector<std::string>& extra, int ranks,
                                   bool one_per_node, const StepPlacement& placement) {
  env::LaunchOptions launch;
  launch.ranks = ranks;
  launch.one_per_node = one_per_node;
  launch.nodelist = placement.nodelist;
  launch.exclude = placement.exclude;
  launch.running_as_root = geteuid() == 0;
  launch.cores = env::online_cpus();
  launch.command = {command.self, subcommand, "--config", command.file};
  launch.command.insert(launch.command.end(), extra.begin(), extra.end());
  for (const auto& set : command.overrides) {
    launch.command.insert(launch.command.end(), {"--set", set});
  }
  return env::launch_argv(env::detect(env::Environment::from_process()), launch);
}

namespace detail {

std::optional<DoctorReport> preflight_report(const settings::Config& config,
                                             const StepCommand& command, int ranks, int nodes,
                                             const Say& say) {
  const ReportFile report_file;
  const auto argv = step_argv(command, "doctor",
                              {"--ranks", std::to_string(ranks), "--output", report_file.path()},
                              nodes, /*one_per_node=*/true);
  const auto end = run_forwarding(argv, std::chrono::seconds(config.slurm.preflight_timeout));
  return read_report(report_file.path(), end, say);
}

namespace {

// The job's preemptions so far (restarts.json); -1 when unknown (said: a ledger that cannot be
// read fails the requeue that needs it, not the step).
std::int64_t preemptions_so_far(const settings::Config& config, const slurm::JobIdentity& job) {
  if (!job.in_job) return 0;
  try {
    return slurm::RestartLedger::load(slurm::ledger_path(config.train.run_dir), job.job_id)
        .preemptions;
  } catch (const IoError& e) {
    std::fprintf(stderr, "cohort: warning: %s\n", e.what());
    return -1;
  }
}

// Removes a mark of this process's (Cohort's own name in the run directory); a failure is said:
// a mark left behind would end the next step that polls the same name (none does: each step has
// its own).
void remove_mark(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::remove(path, error) && error) {
    std::fprintf(stderr, "cohort: warning: cannot remove %s: %s\n", path.c_str(),
                 error.message().c_str());
  }
}

}  // namespace

TrainingStepEnd run_training_step(const settings::Config& config,
                                  const std::vector<std::string>& argv) {
  // A name per step: a rank of an earlier step still ending (its watchdog fires late) marks its
  // own step, never this one.
  static int steps = 0;
  const std::string mark = config.train.run_dir + "/step_failed-" + std::to_string(::getpid()) +
                           "-" + std::to_string(++steps);
  remove_mark(mark);
  const auto job = slurm::current_job(env::Environment::from_process());
  const auto before = preemptions_so_far(config, job);
  setenv(env::kStepFailedVariable, mark.c_str(), 1);
  const auto end = run_forwarding(argv, std::chrono::seconds(0), UniqueFd(), false, mark);
  unsetenv(env::kStepFailedVariable);
  remove_mark(mark);
  const auto after = preemptions_so_far(config, job);
  return {end.marked.value_or(end.code), before >= 0 && after > before};
}

std::string network_note(const DoctorReport& report) {
  const auto& network = report.network;
  return network.status == CheckStatus::kFail
             ? "; network below slurm.preflight_bandwidth: " + network.detail
             : "";
}

}  // namespace detail

std::optional<int> preflight(const settings::Config& config, const StepCommand& command, int ranks,
                             const Say& say) {
  if (!config.slurm.preflight) return std::nullopt;
  const auto environment = env::Environment::from_process();
  const int nodes = static_cast<int>(environment.get_int("SLURM_JOB_NUM_NODES").value_or(1));
  const auto report = detail::preflight_report(config, command, ranks, nodes, say);
  if (decide_preflight(report) == PreflightVerdict::kTrain) {
    if (report) {
      say("pre-flight: " + std::to_string(report->nodes.size()) + " node(s) ready" +
          detail::network_note(*report));
    }
    return std::nullopt;
  }
  const auto outcome = requeue_after_failure(
      config, "pre-flight", environment,
      [&](const slurm::FailureRequeue& outcome) { say(outcome.line); },
      slurm::RestartCause::kPreflight, report->failed_nodes());
  return preflight_exit(outcome, *report);
}

int supervise(const settings::Config& config, const StepCommand& command, int ranks,
              const Say& say) {
  const auto environment = env::Environment::from_process();
  if (config.slurm.spare_nodes > 0 && environment.has("SLURM_JOB_NODELIST") &&
      environment.has("SLURM_JOB_ID")) {
    return detail::supervise_with_spares(config, command, ranks, say);
  }
  if (ranks <= 0) ranks = static_cast<int>(environment.get_int("SLURM_NTASKS").value_or(1));
  if (const auto stop = preflight(config, command, ranks, say)) return *stop;
  const auto end = detail::run_training_step(config, step_argv(command, "train", {}, ranks, false));
  const int code = end.code;
  say("cohort-train: step ended with exit code " + std::to_string(code));
  if (end.preempted && requeue_after_step(code)) return 0;  // Slurm ended it: rank 0 requeued
  std::optional<slurm::FailureRequeue> requeue;
  if (requeue_after_step(code)) {
    const std::string reason = "step failed (exit " + std::to_string(code) + ")";
    auto pending = detail::pend_requeue(config, reason, environment);
    requeue = requeue_after_failure(config, reason, environment,
                                    [&](const slurm::FailureRequeue& outcome) {
                                      say(outcome.line);
                                      detail::settle_requeue(config, std::move(pending), outcome);
                                    });
  }
  return supervise_exit(code, requeue);
}

}  // namespace cohort::ops
