// `cohort bench topology`: the cost of a rank's start-up control path at scale, in one process.
// Launcher detection (env::detect) is run for the last task of an srun step of N nodes x T tasks
// (the environment Slurm gives it, nodelist "node[00001-N]" and "T(xN)"), and the node list's
// expansion and compression timed alone: every rank does this once at start-up, and its cost
// grows with the node count, not the ranks. Medians over `repeats` runs.
#pragma once

#include <cstddef>

namespace cohort::bench {

struct TopologyBenchOptions {
  int nodes = 10000;  // 1..99999
  int tasks = 4;      // per node, 1..1024
  int repeats = 21;   // timed runs; the median is kept
};

struct TopologyBenchResult {
  double detect_ms = 0;      // env::detect of the last task's environment
  double expand_ms = 0;      // env::expand_hostlist of the step's node list
  double compress_ms = 0;    // env::compress_hostlist back
  int rank = 0;              // what detection found: the last task's rank,
  int node_index = 0;        // its node's index
  std::size_t hosts = 0;     // and the step's hosts
  std::size_t expanded = 0;  // the hosts the node list expanded to
};

// UsageError for options out of range; Error when detection disagrees with the step it was given.
TopologyBenchResult bench_topology(const TopologyBenchOptions& options);

}  // namespace cohort::bench
