#include "cohort/env/launch.hpp"

#include "cohort/error.hpp"

namespace cohort::env {

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
  if (in_allocation) {
    // PMIx is the Slurm MPI plugin that starts Open MPI ranks directly (pmi2 fails with it).
    argv = {"srun", "--mpi=pmix", "-n", std::to_string(options.ranks)};
    if (options.one_per_node) {
      argv.insert(argv.end(), {"-N", std::to_string(options.ranks), "--ntasks-per-node=1"});
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
