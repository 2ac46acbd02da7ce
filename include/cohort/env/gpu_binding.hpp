// GPU binding: which device a rank uses, worked out from what the launcher exposes (a pure
// function of the environment, plus, where the caller has it, the number of devices CUDA sees).
//
// The rules, in order (docs/launcher.md, "GPU binding"):
//  1. The visible devices come from CUDA_VISIBLE_DEVICES, else SLURM_STEP_GPUS, else
//     SLURM_JOB_GPUS (indices or GPU-/MIG- UUIDs; empty or NoDevFiles: none), else, when the
//     caller counted them (`cuda_count`), every device CUDA sees (nothing restricts it).
//  2. Slurm bound this task to part of the step's GPUs on its node: the task's list is shorter
//     than SLURM_GPUS_ON_NODE (the step's count on the node, which Slurm sets for every task,
//     where CUDA_VISIBLE_DEVICES and SLURM_STEP_GPUS name only the task's own under --gpus-per-task
//     or --gpu-bind). The task's devices are its own: ordinal 0. Shared when the step has fewer
//     GPUs on the node than local ranks (some tasks were bound to the same one).
//  3. At least as many visible devices as local ranks (every rank sees the same list: all the
//     step's GPUs, Slurm's default without binding): local rank r uses ordinal r.
//  4. Fewer: consecutive local ranks share a device (4 ranks on 2 GPUs: 0,0,1,1), shared.
//
// An ordinal is CUDA's index among the devices the process sees. Slurm's SLURM_*_GPUS are global
// ids, while under cgroup's ConstrainDevices the process sees only those devices, numbered from
// 0: the lists are used for their length and order, never as ordinals.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cohort/env/environment.hpp"

namespace cohort::env {

struct GpuBinding {
  std::vector<std::string> visible;  // ids of the devices this process can see
  std::optional<int> device;         // ordinal (index into `visible`) for this rank; none on CPU
  std::string source;                // what `visible` came from: a variable, "CUDA", or "" (none)
  int local_rank = 0;                // this rank among its node's
  int local_ranks = 1;               // ranks on this node
  int node_devices = 0;              // the devices the node's ranks are spread over
  std::string counted_from;          // where node_devices comes from, e.g. "SLURM_GPUS_ON_NODE=2"
  bool shared = false;               // other local ranks use this rank's device too
};

// `cuda_count`: the devices CUDA sees, when the caller knows (used only where no variable names
// the devices). EnvironmentError for a malformed list, naming the variable.
GpuBinding bind_gpu(const Environment& environment, int local_rank, int local_size,
                    std::optional<int> cuda_count = std::nullopt);

// "4 local ranks share the 2 GPUs of CUDA_VISIBLE_DEVICES=0,1"; "" when the rank's device is its
// own (or it has none).
std::string sharing_text(const GpuBinding& binding);

// The rank's ordinal, for a use that needs a GPU of its own (NCCL: one rank per GPU). Throws
// EnvironmentError (exit 2) in one line starting with `needed_by` when the rank has no device or
// shares it, naming the counts and the variable they came from.
int require_own_gpu(const GpuBinding& binding, const std::string& needed_by);

}  // namespace cohort::env
