// Topology: where this process stands in the job, derived from the launcher's environment alone.
//
// detect() is a pure function of an Environment. Sources, in order of precedence:
//   1. a Slurm job step (srun)            SLURM_STEP_ID + SLURM_PROCID ...
//   2. Open MPI's mpirun (also in Slurm)  OMPI_COMM_WORLD_* ; Slurm then only gives job metadata
//   3. torchrun-style                     RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
//   GROUP_RANK
//      Kubernetes Indexed Job             JOB_COMPLETION_INDEX with an explicit WORLD_SIZE
//   4. a Slurm batch script or salloc shell outside srun: one process, with job metadata
//   5. nothing: one lone process
// Sources that are present together must agree; a disagreement or a malformed value throws
// EnvironmentError naming the variables, never a silent fallback to one process.
// docs/launcher.md is the reference for which variable wins when.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cohort/env/environment.hpp"

namespace cohort::env {

enum class Launcher {
  kLone,        // no launcher: a single process
  kSlurmStep,   // a task of an srun job step
  kSlurmBatch,  // the batch script of an sbatch job, outside srun
  kSlurmAlloc,  // an salloc shell, outside srun
  kOpenMpi,     // Open MPI's mpirun (PMIx underneath)
  kTorchrun,    // torchrun-style RANK/WORLD_SIZE variables
  kIndexedJob,  // a Kubernetes Indexed Job (JOB_COMPLETION_INDEX)
};

const char* to_string(Launcher launcher);

struct SlurmJob {
  std::string job_id;
  std::optional<std::string> step_id;
  std::optional<std::string> array_job_id;
  std::optional<std::string> array_task_id;
  int restart_count = 0;
  std::string job_nodelist;  // compressed, as Slurm gave it
};

struct Topology {
  Launcher launcher = Launcher::kLone;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_size = 1;
  int node_index = 0;
  int node_count = 1;
  std::vector<std::string> hosts;  // one entry per node, in node-index order (empty if unknown)
  std::string host;                // this rank's node name (empty if unknown)
  std::optional<SlurmJob> slurm;   // set whenever a Slurm job is present
  int cpus_per_task = 0;           // 0 when the launcher does not say
  std::vector<std::string> gpus;   // GPU ids visible to this rank (physical index or UUID)
  std::optional<int> cuda_device;  // device ordinal this rank should use, none on a CPU node
  bool gpu_shared = false;         // other local ranks were given the same device (bind_gpu)
  std::optional<std::string> master_addr;
  std::optional<int> master_port;

  // True when several processes take part, i.e. the communication layer must be started.
  bool distributed() const { return world_size > 1; }
};

// Derives the topology from `environment`. Throws EnvironmentError on malformed or conflicting
// input.
Topology detect(const Environment& environment);
// The Slurm job this process belongs to (nullopt outside one): the one reader of the job's
// identity (id, array, restart count), which slurm::current_job and the trainer build on.
// EnvironmentError for an inconsistent one (an empty id, half an array).
std::optional<SlurmJob> read_slurm_job(const Environment& environment);

}  // namespace cohort::env
