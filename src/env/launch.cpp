#include "cohort/env/launch.hpp"

#include <algorithm>

#include "cohort/env/hostlist.hpp"
#include "cohort/error.hpp"

namespace cohort::env {
namespace {

// A step placed on named nodes: only inside an allocation, the same ranks on each, never a node
// that is also excluded.
void check_placement(const LaunchOptions& options, bool in_allocation) {
  if (options.nodelist.empty() && options.exclude.empty()) return;
  COHORT_CHECK(in_allocation, UsageError,
               "cohort launch: a node list or an excluded node list needs a Slurm allocation");
  COHORT_CHECK(!options.one_per_node || options.nodelist.empty(), UsageError,
               "cohort launch: one task per node and a node list together");
  const auto nodes = static_cast<int>(options.nodelist.size());
  COHORT_CHECK(nodes == 0 || options.ranks % nodes == 0, UsageError,
               "cohort launch: ", options.ranks, " ranks do not divide among the ", nodes,
               " nodes of ", compress_hostlist(options.nodelist));
  for (const auto& node : options.nodelist) {
    COHORT_CHECK(
        std::find(options.exclude.begin(), options.exclude.end(), node) == options.exclude.end(),
        UsageError, "cohort launch: node ", node, " is both listed and excluded");
  }
}

}  // namespace

std::vector<std::string> launch_argv(const Topology& topology, const LaunchOptions& options) {
  COHORT_CHECK(options.ranks >= 1, UsageError, "cohort launch: -n must be at least 1, not ",
               options.ranks);
  COHORT_CHECK(!options.command.empty(), UsageError,
               "cohort launch: no command given (cohort launch -n N -- COMMAND...)");
  COHORT_CHECK(!topology.distributed(), UsageError, "cohort launch: this process is already rank ",
               topology.rank, " of ", topology.world_size, " (", to_string(topology.launcher),
               "); run the command directly");
  std::vector<std::string> argv;
  const bool in_allocation =
      topology.launcher == Launcher::kSlurmBatch || topology.launcher == Launcher::kSlurmAlloc;
  check_placement(options, in_allocation);
  if (in_allocation) {
    // PMIx is the Slurm MPI plugin that starts Open MPI ranks directly (pmi2 fails with it).
    argv = {"srun", "--mpi=pmix", "-n", std::to_string(options.ranks)};
    if (options.one_per_node) {
      argv.insert(argv.end(), {"-N", std::to_string(options.ranks), "--ntasks-per-node=1"});
    } else if (!options.nodelist.empty()) {
      const auto nodes = static_cast<int>(options.nodelist.size());
      // --overlap: a step that ended on a node the controller can no longer reach stays in its
      // books until the node is down and cleaned up (minutes), holding the CPUs of its other
      // nodes; a new step on those nodes would wait for it ("Requested nodes are busy").
      argv.insert(argv.end(), {"-N", std::to_string(nodes),
                               "--ntasks-per-node=" + std::to_string(options.ranks / nodes),
                               "--nodelist=" + compress_hostlist(options.nodelist), "--overlap"});
    }
    if (!options.exclude.empty()) {
      argv.push_back("--exclude=" + compress_hostlist(options.exclude));
    }
  } else {
    argv = {"mpirun", "--oversubscribe", "-np", std::to_string(options.ranks)};
    if (options.running_as_root) argv.insert(argv.begin() + 1, "--allow-run-as-root");
    // Open MPI binds each rank to one core when it starts at most two; fewer ranks than cores
    // would then run all of a rank's threads (torch, OpenBLAS) on one core: 1 rank on 2 cores
    // trained the benchmark MLP at 6 600 samples/s bound, 10 400 unbound.
    if (options.cores > options.ranks) argv.insert(argv.end(), {"--bind-to", "none"});
    if (options.one_per_node) argv.insert(argv.end(), {"--map-by", "ppr:1:node"});
  }
  argv.insert(argv.end(), options.command.begin(), options.command.end());
  return argv;
}

}  // namespace cohort::env
