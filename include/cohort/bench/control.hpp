// `cohort bench control`: the control paths of a run measured at this launch's size R (run it at
// 2, 8, 32, 64 ranks and read the growth; docs/scaling.md extrapolates to 10,000 nodes x 4):
//   - start-up: from the process's start (its exec, /proc/self/stat) to MPI ready, the most over
//     the ranks, and the launcher check (MpiSession::verify, an all-gather of every rank's view);
//   - the checkpoint plan for T tensors per rank, each rank holding tensors of its own (pipeline
//     and tensor parallelism's case, the largest plan): plan_checkpoint()'s all-gather (time and
//     bytes to each rank) against a PlanCache's later save (one flag all-reduced);
//   - the manifest rank 0 writes for that checkpoint (bytes), and the save's time;
//   - the monitor's summary: MetricsAggregator::summarize (a gather of kFields doubles per rank to
//     rank 0: bytes there, bytes to every other rank, time), and with share() as a run with
//     monitor.http_port makes it.
#pragma once

#include <cstdint>
#include <string>

#include "cohort/comm/mpi_session.hpp"
#include "cohort/env/topology.hpp"

namespace cohort::bench {

struct ControlBenchOptions {
  int tensors = 16;  // per rank
  int repeats = 5;   // medians of this many
  std::string dir;   // where the checkpoint is written (a fresh subdirectory)
};

struct ControlBenchResult {
  int ranks = 1;
  double startup_s = 0;                        // process start to MPI ready, the slowest rank
  double verify_s = 0;                         // MpiSession::verify
  double plan_s = 0;                           // plan_checkpoint(), median
  std::int64_t plan_bytes = 0;                 // its all-gather, to each rank
  double plan_cached_s = 0;                    // PlanCache::plan() of an unchanged layout, median
  std::int64_t manifest_bytes = 0;             // manifest.json of the checkpoint
  double save_s = 0;                           // that save (tiny tensors: its control cost)
  int summary_fields = 0;                      // doubles in one rank's summary record
  std::int64_t summary_bytes = 0;              // the monitor's summary, to rank 0
  std::int64_t summary_rank_bytes = 0;         // ... to each other rank
  std::int64_t summary_shared_rank_bytes = 0;  // ... with share(), to each other rank
  double summary_s = 0;                        // median
  double summary_shared_s = 0;                 // with share(), median
};

// Collective. `topology`: detected before MPI_Init, as `cohort train` does (verify() checks it).
ControlBenchResult bench_control(const comm::MpiSession& session, env::Topology topology,
                                 const ControlBenchOptions& o);

}  // namespace cohort::bench
