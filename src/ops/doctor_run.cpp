// The collective part of `cohort doctor` (cohort/ops/doctor.hpp): loopback, clocks, all-reduce.
#include <ATen/ops/ones.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "cohort/comm/factory.hpp"
#include "cohort/error.hpp"
#include "cohort/ops/doctor.hpp"

namespace cohort::ops {

// The run's settings by their own names.
using namespace ::cohort::settings;  // NOLINT(google-build-using-namespace)

namespace {

constexpr std::size_t kProbeBytes = 16u << 20;  // long enough to measure, short enough to wait
constexpr int kRepeats = 3;

std::string mbs(double bytes_per_second) {
  char text[64];
  std::snprintf(text, sizeof text, "%.0f MB/s", bytes_per_second / 1e6);
  return text;
}

CheckResult loopback_check(const TrainConfig& config, const comm::MpiSession& session) {
  session.loopback_seconds(kProbeBytes, 1);  // warm-up: first-touch of the buffers
  const double rate = kProbeBytes / session.loopback_seconds(kProbeBytes, kRepeats);
  const double floor = config.slurm.preflight_bandwidth * 1e6;
  const std::string detail =
      "MPI loopback " + mbs(rate) + " (slurm.preflight_bandwidth " + mbs(floor) + ")";
  return {"network", rate >= floor ? CheckStatus::kPass : CheckStatus::kFail, detail};
}

// The all-reduce's bus bandwidth among the nodes (the ring's 2(n-1)/n of the bytes per rank).
CheckResult allreduce_check(const TrainConfig& config, const comm::MpiSession& session) {
  const int n = session.size();
  if (n == 1) return {"network", CheckStatus::kSkip, "one node: no all-reduce among nodes"};
  comm::CommOptions options;
  options.timeout = std::chrono::seconds(config.parallel.timeout_s);
  auto comm = comm::make_communicator(session, comm::Backend::kMpi, options);
  at::Tensor data = at::ones({static_cast<std::int64_t>(kProbeBytes / 4)});
  comm->all_reduce(data);  // warm-up
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRepeats; ++i) comm->all_reduce(data);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kRepeats;
  const double rate = 2.0 * (n - 1) / n * kProbeBytes / seconds;
  const double floor = config.slurm.preflight_bandwidth * 1e6;
  const std::string detail = "all-reduce of " + std::to_string(kProbeBytes >> 20) + " MiB among " +
                             std::to_string(n) + " nodes: bus bandwidth " + mbs(rate);
  return {"network", rate >= floor ? CheckStatus::kPass : CheckStatus::kFail, detail};
}

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

CheckResult clock_check(std::int64_t mine_us, std::int64_t batch_us) {
  const double skew_ms = static_cast<double>(mine_us - batch_us) / 1000.0;
  char text[96];
  std::snprintf(text, sizeof text, "%+.1f ms against the batch node (bound %lld ms)", skew_ms,
                static_cast<long long>(kMaxClockSkew.count()));
  const bool within = std::abs(skew_ms) <= static_cast<double>(kMaxClockSkew.count());
  return {"clock", within ? CheckStatus::kPass : CheckStatus::kFail, text};
}

}  // namespace

DoctorReport run_doctor(const TrainConfig& config, const DoctorOptions& options,
                        const comm::MpiSession& session, const std::string& node) {
  NodeReport mine = check_node(config, options, node);
  session.barrier();  // every node done with its own checks: the clocks are read together
  const std::int64_t clock = now_us();
  const auto clocks = session.gather_to_root(std::to_string(clock));
  mine.checks.push_back(loopback_check(config, session));
  apply_fault_switch(config, mine, "network");
  const auto reports = session.gather_to_root(to_json(mine).dump());
  DoctorReport report;
  report.network = allreduce_check(config, session);
  if (session.rank() != 0) return {};
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const std::string where = "cohort doctor: rank " + std::to_string(i) + "'s report";
    const auto json = nlohmann::json::parse(reports[i], nullptr, /*allow_exceptions=*/false);
    auto node_report = node_report_from_json(json, where);
    node_report.checks.push_back(clock_check(std::stoll(clocks[i]), std::stoll(clocks[0])));
    apply_fault_switch(config, node_report, "clock");
    report.nodes.push_back(std::move(node_report));
  }
  return report;
}

}  // namespace cohort::ops
