// `cohort bench monitor`: what monitoring costs, side by side in one run. The same training (an
// MLP on a synthetic set, the trainer's own loop) runs with monitor.enabled on (per-step timing
// and records, grad norm, a cross-rank summary every summary_every steps, the Prometheus
// textfile, the diagnosis) and off (loss records only), alternating which goes first in each
// round. The figure is the steady step time (after the first 3 steps); the overhead is the
// median over rounds of each round's on/off ratio.
// Floor (issue 8): on <= 1.02 x off.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/comm/mpi_session.hpp"

namespace cohort::bench {

struct MonitorBenchOptions {
  std::string dir = "/tmp";  // data and run directories go to a fresh subdirectory, removed after
  std::int64_t features = 256;
  std::vector<std::int64_t> hidden = {1024, 1024};
  std::int64_t batch = 32;  // per rank
  std::int64_t steps = 300;
  std::int64_t summary_every = 50;
  int rounds = 5;
  int threads = 1;  // torch threads per rank
};

struct MonitorBenchResult {
  int ranks = 1;
  double step_on_ms = 0, step_off_ms = 0;
  double overhead = 0;  // median over rounds of (on / off) - 1, each round's pair adjacent in time
  // The monitor's own time per step in the monitored runs (its calls and the gradient norms it
  // asked for), measured inside the run: what the side-by-side ratio cannot resolve below noise.
  double self_ms = 0, self_share = 0;  // share: self_ms / step_on_ms
  std::vector<double> on_rounds_ms, off_rounds_ms;
};

MonitorBenchResult bench_monitor(const comm::MpiSession& session,
                                 const MonitorBenchOptions& options);  // collective

}  // namespace cohort::bench
