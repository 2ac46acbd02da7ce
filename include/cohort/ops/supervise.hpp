// `cohort supervise`: the whole body of a self-requeueing batch script, as the ops module runs it.
// The training step (`cohort train` on N ranks through srun, or mpirun outside Slurm) runs through
// run_forwarding() (step_runner.hpp), so that the signals the batch shell receives reach it; when
// it failed in a way a restart can cure (requeue_after_step: 76 watchdog, 77 peer lost, 78 node
// fault, 137 killed) the job is requeued with requeue_after_failure() (supervision.hpp).
//
// Pre-flight (slurm.preflight): `cohort doctor` first runs as a step of its own, one task per node
// (doctor.hpp). Nodes that fail are excluded the way a lost node is (RestartCause::kPreflight,
// under slurm.max_preflight_requeues) and the job is requeued before any training time is spent.
// A run where every node passes goes on to train; so does one whose doctor gave no report within
// slurm.preflight_timeout (said in one line: the checks are a help, not a gate that can hang).
//
// The decisions are decisions.hpp's; what is said goes to `say`, one line at a time, when it
// happens (the caller prints it: the cli, or a user's own launcher).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cohort/settings/config.hpp"

namespace cohort::ops {

// A Cohort command run as a job step: `<self> <subcommand> --config FILE [<extra>...] [--set ...]`.
struct StepCommand {
  std::string self;                    // the cohort executable (env::executable_path())
  std::string file;                    // the training's config file
  std::vector<std::string> overrides;  // its --set overrides, passed on as they were given
};

// Where a step runs in an allocation with spares: on exactly `nodelist` (the same ranks on each),
// off `exclude` (the job's nodes left out: spares and failed ones). Empty: srun places it.
struct StepPlacement {
  std::vector<std::string> nodelist;
  std::vector<std::string> exclude;
};

// The launcher's argv (srun in a Slurm job, mpirun elsewhere) for the command on `ranks` ranks,
// one per node when `one_per_node`.
std::vector<std::string> step_argv(const StepCommand& command, const std::string& subcommand,
                                   const std::vector<std::string>& extra, int ranks,
                                   bool one_per_node, const StepPlacement& placement = {});

using Say = std::function<void(const std::string& line)>;

// The pre-flight; nullopt: train. Otherwise the exit code of the batch script (preflight_exit).
std::optional<int> preflight(const settings::Config& config, const StepCommand& command, int ranks,
                             const Say& say);

// The pre-flight, the training step and the requeue after it; the batch script's exit code
// (supervise_exit: the step's, or 0 after a requeue). `ranks` 0: SLURM_NTASKS, else 1. With
// slurm.spare_nodes in a Slurm job, the steps run on N of the job's nodes and a failed one is
// restarted inside the allocation (recovery.hpp; `ranks` 0 or N x the tasks per node).
int supervise(const settings::Config& config, const StepCommand& command, int ranks,
              const Say& say);

}  // namespace cohort::ops
