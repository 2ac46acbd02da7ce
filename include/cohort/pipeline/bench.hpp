// `cohort bench pipeline`: the bubble of each schedule, measured, against the theory.
//
// Every rank of the communicator is one stage. For each schedule and each number of micro-batches
// M, a few steps run through the real Executor (its async send/recv, its schedule) over stages
// whose work per micro-batch is fixed: with work "sleep" a forward takes forward_ms and a backward
// twice that, as timed waits that need no core (so the figure is the schedule's, even with more
// stages than cores); with work "compute" a chain of Linear layers does real arithmetic. Steps
// start together (a barrier) and last until the last stage finishes (the slowest stage's time,
// all-reduced). A stage's bubble is the share of that time it did not compute; the figure is the
// mean over stages and steps (the first step is warm-up), beside (p - 1) / (M + p - 1).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "cohort/comm/communicator.hpp"
#include "cohort/pipeline/schedule.hpp"

namespace cohort::pipeline {

struct PipelineBenchOptions {
  std::vector<int> micro_batches = {1, 2, 4, 8, 16};
  std::string work = "sleep";  // sleep | compute
  double forward_ms = 2.0;     // sleep: a forward's time per micro-batch and stage
  std::int64_t width = 256;    // compute: Linear width; also the activation's width
  int layers = 4;              // compute: Linear layers per stage
  std::int64_t micro_batch_size = 16;
  int steps = 6;
};

struct PipelineBenchRow {
  Schedule schedule = Schedule::kGpipe;
  int micro_batches = 1;
  double theory = 0;       // (p - 1) / (M + p - 1)
  double measured = 0;     // mean over stages of 1 - compute / step time (the slowest stage's)
  double step_ms = 0;      // mean step time
  int peak_in_flight = 0;  // the most micro-batches any stage held
};

// Collective over `world` (MPI, CPU). ConfigError for an unknown work or an empty M list.
std::vector<PipelineBenchRow> bench_pipeline(comm::Communicator& world,
                                             const PipelineBenchOptions& options);

// `cohort bench pipeline --json`: the work and "rows", one per schedule and M, each with the
// number of stages.
nlohmann::json to_json(const std::vector<PipelineBenchRow>& rows,
                       const PipelineBenchOptions& options, int stages);

}  // namespace cohort::pipeline
