#include "preflight.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cohort/env/environment.hpp"
#include "cohort/env/launch.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/train/doctor.hpp"
#include "cohort/train/supervision.hpp"
#include "command.hpp"
#include "step_runner.hpp"

namespace cohort::cli {
namespace {

// A file of our own for the doctor's report, removed when done.
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

std::vector<std::string> doctor_argv(const std::string& file,
                                     const std::vector<std::string>& overrides, int ranks,
                                     int nodes, const std::string& report) {
  env::LaunchOptions launch;
  launch.ranks = nodes;
  launch.one_per_node = true;
  launch.running_as_root = geteuid() == 0;
  launch.cores = env::online_cpus();
  launch.command = {self_executable(),     "doctor",   "--config", file, "--ranks",
                    std::to_string(ranks), "--output", report};
  for (const auto& set : overrides) launch.command.insert(launch.command.end(), {"--set", set});
  return env::launch_argv(env::detect(env::Environment::from_process()), launch);
}

// The doctor's report, or nullopt (said) when it wrote none that can be read.
std::optional<train::DoctorReport> read_report(const std::string& path, const StepEnd& end) {
  try {
    COHORT_CHECK(io::file_bytes(path) > 0, IoError, path, ": empty (cohort doctor exited ",
                 end.code, end.timed_out ? ", after slurm.preflight_timeout)" : ")");
    return train::read_doctor_report(path);
  } catch (const IoError& e) {  // said, not swallowed: training starts without the checks
    std::printf("pre-flight: no report: %s; training starts without it\n", e.what());
    return std::nullopt;
  }
}

}  // namespace

std::optional<int> preflight(const train::Config& config, const std::string& file,
                             const std::vector<std::string>& overrides, int ranks) {
  if (!config.slurm.preflight) return std::nullopt;
  const auto environment = env::Environment::from_process();
  const int nodes = static_cast<int>(environment.get_int("SLURM_JOB_NUM_NODES").value_or(1));
  const ReportFile report_file;
  const auto end = run_forwarding(doctor_argv(file, overrides, ranks, nodes, report_file.path()),
                                  std::chrono::seconds(config.slurm.preflight_timeout));
  const auto report = read_report(report_file.path(), end);
  if (!report) return std::nullopt;
  const auto failed = report->failed_nodes();
  if (failed.empty()) {
    const auto& network = report->network;
    std::printf("pre-flight: %zu node(s) ready%s\n", report->nodes.size(),
                network.status == train::CheckStatus::kFail
                    ? ("; network below slurm.preflight_bandwidth: " + network.detail).c_str()
                    : "");
    std::fflush(stdout);
    return std::nullopt;
  }
  const auto outcome = train::requeue_after_failure(config, "pre-flight", environment,
                                                    slurm::RestartCause::kPreflight, failed);
  std::printf("%s\n", outcome.line.c_str());
  std::fflush(stdout);
  return outcome.requeued ? 0 : report->exit_code();
}

}  // namespace cohort::cli
