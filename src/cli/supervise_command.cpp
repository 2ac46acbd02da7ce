// `cohort supervise --config FILE [--set k=v ...] [-n N]`: the whole body of a self-requeueing
// batch script. Starts the training step (`cohort train` on N ranks through srun, or mpirun
// outside Slurm), passes the signals the batch shell receives (`#SBATCH --signal=B:USR1@N`,
// Slurm's SIGTERM, Ctrl-C) on to it, and when the step failed in a way a restart can cure
// (76 watchdog, 77 peer lost, 78 node fault, 137 killed) requeues the job with
// requeue_after_failure(). Exit
// code: the step's, or 0 after a requeue.
//
// With slurm.preflight, `cohort doctor` checks every node first (preflight.hpp). The step runs
// through run_forwarding() (step_runner.hpp).
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "cohort/env/environment.hpp"
#include "cohort/env/launch.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/error.hpp"
#include "cohort/slurm/failure_requeue.hpp"
#include "cohort/train/config.hpp"
#include "command.hpp"
#include "preflight.hpp"
#include "requeue.hpp"
#include "step_runner.hpp"

namespace po = boost::program_options;

namespace cohort::cli {
namespace {

// The launcher's argv for `<this executable> train --config FILE --set ...` on `ranks` ranks.
std::vector<std::string> step_argv(const std::string& file, const std::vector<std::string>& sets,
                                   int ranks) {
  env::LaunchOptions launch;
  launch.ranks = ranks;
  launch.running_as_root = geteuid() == 0;
  launch.cores = env::online_cpus();
  launch.command = {self_executable(), "train", "--config", file};
  for (const auto& set : sets) launch.command.insert(launch.command.end(), {"--set", set});
  return env::launch_argv(env::detect(env::Environment::from_process()), launch);
}

}  // namespace

int run_supervise(const std::vector<std::string>& args, int*, char***) {
  std::string file;
  std::vector<std::string> overrides;
  int ranks = 0;
  po::options_description desc("cohort supervise options");
  desc.add_options()("help,h", "show this help")(
      "config,c", path_value(&file, PathKind::kFile)->required(), "the training's INI file")(
      "set", po::value(&overrides)->composing(), "override: section.key=value (repeatable)")(
      "ranks,n", po::value(&ranks)->default_value(0), "ranks (0: SLURM_NTASKS, else 1)");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: cohort supervise --config FILE [--set k=v ...] [-n N]\n" << desc;
    return 0;
  }
  po::notify(vm);
  const auto config = train::Config::load(file, overrides);  // a bad one fails before the step
  if (ranks <= 0) {
    ranks = static_cast<int>(env::Environment::from_process().get_int("SLURM_NTASKS").value_or(1));
  }
  if (const auto stop = preflight(config, file, overrides, ranks)) return *stop;
  const int rc = run_forwarding(step_argv(file, overrides, ranks)).code;
  std::printf("cohort-train: step ended with exit code %d\n", rc);
  std::fflush(stdout);
  if (slurm::lost_rank_exit(rc)) {
    const int requeued =
        requeue_after_failure(config, "step failed (exit " + std::to_string(rc) + ")");
    if (requeued == 0) return 0;
  }
  return rc;
}

}  // namespace cohort::cli
