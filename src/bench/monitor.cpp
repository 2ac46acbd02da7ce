#include "cohort/bench/monitor.hpp"

#include <ATen/ops/tensor.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "bench/common.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/data/tools.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/train/trainer.hpp"

namespace cohort::bench {

// The trainer's names (and the settings and models it sees) unqualified: a benchmark of the
// trainer is written in its terms.
using namespace ::cohort::train;  // NOLINT(google-build-using-namespace)

namespace {

std::string join(const std::vector<std::int64_t>& v) {
  std::string s;
  for (const auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// The medians of the rounds, the monitor's overhead and its own share of a step.
void summarize(const std::vector<double>& self_ms, MonitorBenchResult& r) {
  r.step_on_ms = median(r.on_rounds_ms);
  r.step_off_ms = median(r.off_rounds_ms);
  // Each round's two runs are adjacent in time: their ratio cancels the machine's slow drift
  // (other tenants, frequency), which the medians of the two columns do not.
  std::vector<double> ratios;
  for (std::size_t i = 0; i < r.on_rounds_ms.size(); ++i) {
    ratios.push_back(r.on_rounds_ms[i] / r.off_rounds_ms[i]);
  }
  r.overhead = median(ratios) - 1;
  r.self_ms = median(self_ms);
  r.self_share = r.self_ms / r.step_on_ms;
}

}  // namespace

MonitorBenchResult bench_monitor(const comm::MpiSession& session, const MonitorBenchOptions& o) {
  MonitorBenchResult r;
  r.ranks = session.size();
  const std::string dir =
      shared_dir(*comm::make_communicator(session, comm::Backend::kMpi), o.dir, "monitor");
  const std::string data = dir + "/set.h5";
  if (session.rank() == 0) {
    data::SyntheticOptions s;
    s.samples = o.batch * session.size() * (o.steps + 1);
    s.features = o.features;
    s.seed = 3;
    data::make_synthetic(data, s);
  }
  session.barrier();
  std::vector<double> self_ms;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> quiet(std::fopen("/dev/null", "w"), std::fclose);
  const auto step_ms = [&](bool on) {
    const auto config = Config::load(
        "", {"data.path=" + data, "data.batch_size=" + std::to_string(o.batch),
             "model.hidden=" + join(o.hidden), "train.max_steps=" + std::to_string(o.steps),
             "train.epochs=2", "train.log_every=0", "train.threads=" + std::to_string(o.threads),
             "train.run_dir=" + dir + (on ? "/on" : "/off"), "checkpoint.resume=false",
             "checkpoint.at_end=false", "monitor.enabled=" + std::string(on ? "true" : "false"),
             "monitor.console=lines", "monitor.summary_every=" + std::to_string(o.summary_every),
             "slurm.signals="});
    Trainer trainer(config, session, "bench");
    const auto summary = trainer.run(quiet.get());
    COHORT_CHECK(summary.steady_samples_per_s > 0, Error, "bench monitor: no steady steps");
    if (on) self_ms.push_back(1e3 * summary.monitor_seconds / static_cast<double>(summary.steps));
    return 1e3 * static_cast<double>(o.batch * session.size()) / summary.steady_samples_per_s;
  };
  for (int round = 0; round < o.rounds; ++round) {
    const bool on_first = round % 2 == 0;
    const double first = step_ms(on_first), second = step_ms(!on_first);
    r.on_rounds_ms.push_back(on_first ? first : second);
    r.off_rounds_ms.push_back(on_first ? second : first);
  }
  summarize(self_ms, r);
  session.barrier();
  if (session.rank() == 0) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  return r;
}

}  // namespace cohort::bench
