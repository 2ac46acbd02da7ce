// Launcher detection. docs/launcher.md documents the precedence implemented here; keep them in
// step.
#include "cohort/env/topology.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "cohort/env/gpu_binding.hpp"
#include "cohort/env/hostlist.hpp"
#include "cohort/error.hpp"

namespace cohort::env {
namespace {

constexpr long kMaxRanks = 1L << 24;
// Slurm's pseudo step ids (batch, extern, interactive...) start at 0xfffffff0.
constexpr long kFirstPseudoStep = 0xfffffff0L;

std::optional<int> get_count(const Environment& env, const char* name, long min_value = 0) {
  const auto value = env.get_int(name, min_value, kMaxRanks);
  if (!value) return std::nullopt;
  return static_cast<int>(*value);
}

int require_count(const Environment& env, const char* name, long min_value = 0) {
  const auto value = get_count(env, name, min_value);
  COHORT_CHECK(value.has_value(), EnvironmentError, "environment variable ", name,
               " is required by the launcher that was detected but is not set");
  return *value;
}

// The first of `names` that is set, with its name.
std::optional<std::pair<std::string, int>> first_count(const Environment& env,
                                                       std::initializer_list<const char*> names,
                                                       long min_value) {
  for (const char* name : names) {
    if (const auto value = get_count(env, name, min_value)) return std::make_pair(name, *value);
  }
  return std::nullopt;
}

// When `other` is set it must equal `value` (which came from `source`).
void must_agree(const Environment& env, const std::string& source, int value, const char* other) {
  const auto theirs = get_count(env, other);
  COHORT_CHECK(!theirs || *theirs == value, EnvironmentError,
               "launcher variables disagree: ", source, "=", value, " but ", other, "=", *theirs);
}

void check_ranks(const Topology& t, const std::string& who) {
  COHORT_CHECK(t.world_size >= 1 && t.rank < t.world_size, EnvironmentError, who, ": rank ", t.rank,
               " is not below the world size ", t.world_size);
  COHORT_CHECK(t.local_size >= 1 && t.local_rank < t.local_size, EnvironmentError, who,
               ": local rank ", t.local_rank, " is not below the local size ", t.local_size);
  COHORT_CHECK(t.local_size <= t.world_size, EnvironmentError, who, ": local size ", t.local_size,
               " exceeds the world size ", t.world_size);
}

// True when this process is a task of a real srun step (not the batch script or extern step).
bool in_slurm_step(const Environment& env, const std::optional<SlurmJob>& job) {
  if (!job || !job->step_id) return false;
  const auto step =
      env.get_int(env.has("SLURM_STEP_ID") ? "SLURM_STEP_ID" : "SLURM_STEPID", 0, 0xffffffffL);
  return *step < kFirstPseudoStep;
}

// Hosts of the step and this task's node among them.
void read_step_nodes(const Environment& env, Topology& t, const char* list_var) {
  const auto nodelist = env.get(list_var);
  COHORT_CHECK(nodelist.has_value(), EnvironmentError,
               "in a Slurm step but neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set");
  t.hosts = expand_hostlist(*nodelist, list_var);
  t.node_count = static_cast<int>(t.hosts.size());
  if (const auto nodes = first_count(env, {"SLURM_STEP_NUM_NODES"}, 1)) {
    COHORT_CHECK(nodes->second == t.node_count, EnvironmentError,
                 "launcher variables disagree: ", list_var, "='", *nodelist, "' has ", t.node_count,
                 " hosts but ", nodes->first, "=", nodes->second);
  }
  COHORT_CHECK(t.node_index < t.node_count, EnvironmentError, "SLURM_NODEID=", t.node_index,
               " is not below the node count ", t.node_count, " of ", list_var);
  t.host = t.hosts[static_cast<size_t>(t.node_index)];
}

// World and local size from tasks-per-node (summed), else from the task count spread evenly.
// SLURM_NTASKS is absent when only --ntasks-per-node was given, so neither source is required
// alone.
void read_step_tasks(const Environment& env, Topology& t, const char* list_var) {
  const char* tpn_var =
      env.has("SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
  const auto tpn_text = env.get(tpn_var);
  const auto tasks = first_count(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"}, 1);
  COHORT_CHECK(tpn_text || tasks, EnvironmentError,
               "in a Slurm step but none of SLURM_STEP_NUM_TASKS, SLURM_NTASKS or "
               "SLURM_STEP_TASKS_PER_NODE is set");
  if (tpn_text) {
    const auto per_node = expand_tasks_per_node(*tpn_text, tpn_var);
    COHORT_CHECK(static_cast<int>(per_node.size()) == t.node_count, EnvironmentError,
                 "launcher variables disagree: ", tpn_var, "='", *tpn_text, "' lists ",
                 per_node.size(), " nodes but ", list_var, " has ", t.node_count);
    t.local_size = per_node[static_cast<size_t>(t.node_index)];
    // Summed in 64 bits: per-node counts of up to 9 digits each would wrap an int.
    const std::int64_t world = std::accumulate(per_node.begin(), per_node.end(), std::int64_t{0});
    COHORT_CHECK(world <= kMaxRanks, EnvironmentError, tpn_var, "='", *tpn_text, "' sums to ",
                 world, " tasks, more than ", kMaxRanks);
    t.world_size = static_cast<int>(world);
    if (tasks) {
      must_agree(env, std::string(tpn_var) + " (summed)", t.world_size, tasks->first.c_str());
    }
    return;
  }
  t.world_size = tasks->second;
  COHORT_CHECK(t.world_size % t.node_count == 0, EnvironmentError, tasks->first, "=", t.world_size,
               " does not divide over ", t.node_count,
               " nodes and SLURM_STEP_TASKS_PER_NODE is not set");
  t.local_size = t.world_size / t.node_count;
}

void detect_slurm_step(const Environment& env, Topology& t) {
  t.launcher = Launcher::kSlurmStep;
  t.rank = require_count(env, "SLURM_PROCID");
  t.local_rank = require_count(env, "SLURM_LOCALID");
  t.node_index = require_count(env, "SLURM_NODEID");
  const char* list_var =
      env.has("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
  read_step_nodes(env, t, list_var);
  read_step_tasks(env, t, list_var);
  must_agree(env, "SLURM_PROCID", t.rank, "PMIX_RANK");
  must_agree(env, "SLURM_PROCID", t.rank, "RANK");
  must_agree(env, "SLURM_LOCALID", t.local_rank, "LOCAL_RANK");
  check_ranks(t, "Slurm step");
}

// Open MPI's mpirun, possibly inside a Slurm allocation: the OMPI variables give the ranks.
void detect_openmpi(const Environment& env, Topology& t) {
  t.launcher = Launcher::kOpenMpi;
  t.rank = require_count(env, "OMPI_COMM_WORLD_RANK");
  t.world_size = require_count(env, "OMPI_COMM_WORLD_SIZE", 1);
  t.local_rank = get_count(env, "OMPI_COMM_WORLD_LOCAL_RANK").value_or(t.rank);
  t.local_size = get_count(env, "OMPI_COMM_WORLD_LOCAL_SIZE", 1).value_or(t.world_size);
  must_agree(env, "OMPI_COMM_WORLD_RANK", t.rank, "PMIX_RANK");
  check_ranks(t, "Open MPI");
  // Inside Slurm, mpirun's daemons run in a step of their own: SLURMD_NODENAME names this node and
  // SLURM_JOB_NODELIST the allocation. SLURM_PROCID/SLURM_NTASKS describe that daemon step, not us.
  const auto node_name = env.get("SLURMD_NODENAME");
  const auto job_list = env.get("SLURM_JOB_NODELIST");
  if (node_name && job_list) {
    t.hosts = expand_hostlist(*job_list, "SLURM_JOB_NODELIST");
    const auto it = std::find(t.hosts.begin(), t.hosts.end(), *node_name);
    COHORT_CHECK(it != t.hosts.end(), EnvironmentError,
                 "launcher variables disagree: SLURMD_NODENAME='", *node_name,
                 "' is not in SLURM_JOB_NODELIST='", *job_list, "'");
    t.node_index = static_cast<int>(it - t.hosts.begin());
    t.node_count = static_cast<int>(t.hosts.size());
    t.host = *node_name;
  } else if (t.local_size == t.world_size) {
    t.node_index = 0;
    t.node_count = 1;
  } else {
    t.node_index = -1;  // mpirun's mapping is not in the environment: the MPI bootstrap fills it in
    t.node_count = -1;
  }
}

void detect_torchrun(const Environment& env, Topology& t) {
  t.launcher = Launcher::kTorchrun;
  t.rank = require_count(env, "RANK");
  t.world_size = require_count(env, "WORLD_SIZE", 1);
  t.local_rank = get_count(env, "LOCAL_RANK").value_or(0);
  t.local_size = get_count(env, "LOCAL_WORLD_SIZE", 1).value_or(env.has("LOCAL_RANK") ? -1 : 1);
  COHORT_CHECK(t.local_size > 0, EnvironmentError,
               "LOCAL_RANK is set but LOCAL_WORLD_SIZE is not: the local size is unknown");
  t.node_index = get_count(env, "GROUP_RANK").value_or(t.rank / t.local_size);
  t.node_count = (t.world_size + t.local_size - 1) / t.local_size;
  COHORT_CHECK(t.node_index < t.node_count, EnvironmentError, "GROUP_RANK=", t.node_index,
               " is not below the node count ", t.node_count, " (WORLD_SIZE / LOCAL_WORLD_SIZE)");
  if (env.has("PMIX_RANK")) must_agree(env, "RANK", t.rank, "PMIX_RANK");
  check_ranks(t, "torchrun");
}

void detect_indexed_job(const Environment& env, Topology& t) {
  t.launcher = Launcher::kIndexedJob;
  t.rank = require_count(env, "JOB_COMPLETION_INDEX");
  t.world_size = require_count(env, "WORLD_SIZE", 1);
  t.node_index = t.rank;  // one pod per index
  t.node_count = t.world_size;
  check_ranks(t, "Indexed Job");
}

// Outside srun the batch script (or salloc shell) is one process: SLURM_PROCID=0 and
// SLURM_NTASKS there describe the allocation, not this process.
void detect_slurm_shell(const Environment& env, Topology& t) {
  t.launcher = env.get("ENVIRONMENT") == std::optional<std::string>("BATCH")
                   ? Launcher::kSlurmBatch
                   : Launcher::kSlurmAlloc;
  if (!t.slurm->job_nodelist.empty()) {
    t.hosts = expand_hostlist(t.slurm->job_nodelist, "SLURM_JOB_NODELIST");
    t.host = env.get("SLURMD_NODENAME").value_or("");
  }
}

void detect_launcher(const Environment& env, Topology& t) {
  if (env.has("OMPI_COMM_WORLD_RANK")) return detect_openmpi(env, t);
  if (env.has("TORCHELASTIC_RUN_ID") && env.has("RANK")) return detect_torchrun(env, t);
  if (in_slurm_step(env, t.slurm)) return detect_slurm_step(env, t);
  if (env.has("RANK") || env.has("WORLD_SIZE")) {
    if (env.has("JOB_COMPLETION_INDEX") && !env.has("RANK")) return detect_indexed_job(env, t);
    return detect_torchrun(env, t);
  }
  if (t.slurm) return detect_slurm_shell(env, t);
  COHORT_CHECK(!env.has("PMIX_RANK"), EnvironmentError, "PMIX_RANK=", *env.get("PMIX_RANK"),
               " is set but no launcher variable gives the world size (OMPI_COMM_WORLD_SIZE, "
               "SLURM_NTASKS or WORLD_SIZE)");
}

}  // namespace

std::optional<SlurmJob> read_slurm_job(const Environment& env) {
  const auto job_id = env.get("SLURM_JOB_ID") ? env.get("SLURM_JOB_ID") : env.get("SLURM_JOBID");
  if (!job_id) return std::nullopt;
  COHORT_CHECK(!job_id->empty(), EnvironmentError, "environment variable SLURM_JOB_ID is empty");
  SlurmJob job;
  job.job_id = *job_id;
  job.step_id = env.get("SLURM_STEP_ID") ? env.get("SLURM_STEP_ID") : env.get("SLURM_STEPID");
  job.array_job_id = env.get("SLURM_ARRAY_JOB_ID");
  job.array_task_id = env.get("SLURM_ARRAY_TASK_ID");
  COHORT_CHECK(job.array_job_id.has_value() == job.array_task_id.has_value(), EnvironmentError,
               "SLURM_ARRAY_JOB_ID and SLURM_ARRAY_TASK_ID must be set together");
  job.restart_count = get_count(env, "SLURM_RESTART_COUNT").value_or(0);
  job.job_nodelist = env.get("SLURM_JOB_NODELIST").value_or(env.get("SLURM_NODELIST").value_or(""));
  return job;
}

const char* to_string(Launcher launcher) {
  switch (launcher) {
    case Launcher::kLone:
      return "lone process";
    case Launcher::kSlurmStep:
      return "slurm step";
    case Launcher::kSlurmBatch:
      return "slurm batch script";
    case Launcher::kSlurmAlloc:
      return "salloc shell";
    case Launcher::kOpenMpi:
      return "open mpi";
    case Launcher::kTorchrun:
      return "torchrun";
    case Launcher::kIndexedJob:
      return "indexed job";
  }
  return "unknown";
}

Topology detect(const Environment& env) {
  Topology t;
  t.slurm = read_slurm_job(env);
  detect_launcher(env, t);
  t.cpus_per_task = get_count(env, "SLURM_CPUS_PER_TASK", 1).value_or(0);
  t.master_addr = env.get("MASTER_ADDR");
  if (const auto port = env.get_int("MASTER_PORT", 1, 65535))
    t.master_port = static_cast<int>(*port);
  const GpuBinding binding = bind_gpu(env, t.local_rank, t.local_size);
  t.gpus = binding.visible;
  t.cuda_device = binding.device;
  t.gpu_shared = binding.shared;
  return t;
}

}  // namespace cohort::env
