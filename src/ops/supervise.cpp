#include "cohort/ops/supervise.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cohort/env/environment.hpp"
#include "cohort/env/launch.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/ops/decisions.hpp"
#include "cohort/ops/doctor.hpp"
#include "cohort/ops/step_runner.hpp"
#include "cohort/ops/supervision.hpp"

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
                                   bool one_per_node) {
  env::LaunchOptions launch;
  launch.ranks = ranks;
  launch.one_per_node = one_per_node;
  launch.running_as_root = geteuid() == 0;
  launch.cores = env::online_cpus();
  launch.command = {command.self, subcommand, "--config", command.file};
  launch.command.insert(launch.command.end(), extra.begin(), extra.end());
  for (const auto& set : command.overrides) {
    launch.command.insert(launch.command.end(), {"--set", set});
  }
  return env::launch_argv(env::detect(env::Environment::from_process()), launch);
}

std::optional<int> preflight(const settings::Config& config, const StepCommand& command, int ranks,
                             const Say& say) {
  if (!config.slurm.preflight) return std::nullopt;
  const auto environment = env::Environment::from_process();
  const int nodes = static_cast<int>(environment.get_int("SLURM_JOB_NUM_NODES").value_or(1));
  const ReportFile report_file;
  const auto argv = step_argv(command, "doctor",
                              {"--ranks", std::to_string(ranks), "--output", report_file.path()},
                              nodes, /*one_per_node=*/true);
  const auto end = run_forwarding(argv, std::chrono::seconds(config.slurm.preflight_timeout));
  const auto report = read_report(report_file.path(), end, say);
  if (decide_preflight(report) == PreflightVerdict::kTrain) {
    if (report) {
      const auto& network = report->network;
      say("pre-flight: " + std::to_string(report->nodes.size()) + " node(s) ready" +
          (network.status == CheckStatus::kFail
               ? "; network below slurm.preflight_bandwidth: " + network.detail
               : ""));
    }
    return std::nullopt;
  }
  const auto outcome = requeue_after_failure(
      config, "pre-flight", environment, slurm::RestartCause::kPreflight, report->failed_nodes());
  say(outcome.line);
  return preflight_exit(outcome, *report);
}

int supervise(const settings::Config& config, const StepCommand& command, int ranks,
              const Say& say) {
  if (const auto stop = preflight(config, command, ranks, say)) return *stop;
  const int code = run_forwarding(step_argv(command, "train", {}, ranks, false)).code;
  say("cohort-train: step ended with exit code " + std::to_string(code));
  std::optional<slurm::FailureRequeue> requeue;
  if (requeue_after_step(code)) {
    requeue = requeue_after_failure(config, "step failed (exit " + std::to_string(code) + ")",
                                    env::Environment::from_process());
    say(requeue->line);
  }
  return supervise_exit(code, requeue);
}

}  // namespace cohort::ops
