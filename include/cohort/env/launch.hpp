// `cohort launch -n N -- COMMAND...`: the command line that starts N ranks of COMMAND where the
// process stands — srun inside a Slurm allocation, mpirun elsewhere. Pure: it builds the argv, the
// caller execs it.
#pragma once

#include <string>
#include <vector>

#include "cohort/env/topology.hpp"

namespace cohort::env {

struct LaunchOptions {
  int ranks = 1;
  std::vector<std::string> command;
  bool running_as_root = false;  // mpirun refuses root unless told
  int cores = 0;                 // this node's cores (0: unknown); decides mpirun's binding
  bool one_per_node = false;     // `ranks` is the node count: one task on each node
  // Inside an allocation only: the step on exactly these nodes (`ranks` a multiple of their
  // count, the same on each), and, for the record, the job's nodes it must not touch. Empty: srun
  // places the ranks as it likes.
  std::vector<std::string> nodelist{};
  std::vector<std::string> exclude{};
};

// Throws UsageError when ranks < 1, the command is empty, or this process is already one rank of
// a multi-rank launch (launching from inside a step would nest jobs); when a nodelist or an
// exclude list is given outside an allocation, `ranks` is not a multiple of the nodelist's
// length, or a node is in both.
std::vector<std::string> launch_argv(const Topology& topology, const LaunchOptions& options);

}  // namespace cohort::env
