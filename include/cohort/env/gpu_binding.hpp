// GPU binding: which device a rank uses, honouring what Slurm and CUDA_VISIBLE_DEVICES expose.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cohort/env/environment.hpp"

namespace cohort::env {

struct GpuBinding {
  std::vector<std::string> visible;  // ids of the devices this process can see
  std::optional<int> device;         // ordinal (index into `visible`) for this rank; none on CPU
};

// Visible devices come from CUDA_VISIBLE_DEVICES, else SLURM_STEP_GPUS, else SLURM_JOB_GPUS.
// With one visible device every local rank uses it; with at least `local_size` devices, local rank
// r uses device r; otherwise ranks share devices round-robin.
GpuBinding bind_gpu(const Environment& environment, int local_rank, int local_size);

}  // namespace cohort::env
