// The health of this node's NVIDIA GPUs through NVML, for `cohort doctor`: uncorrected ECC errors
// since the driver loaded, pages waiting to be retired (the GPU needs a reset), and hardware
// slowdown (thermal, power brake, the HW slowdown line). NVML is loaded at run time
// (libnvidia-ml.so.1 comes with the driver, never with Cohort), so a node without the driver says
// so instead of failing to start.
#pragma once

#include <string>
#include <vector>

namespace cohort::env {

struct GpuHealth {
  int index = 0;
  bool healthy = true;
  std::string problem;  // what is wrong, when not healthy
};

struct GpuHealthReport {
  bool nvml = false;            // libnvidia-ml.so.1 was found and initialised
  std::string note;             // why there is no report ("NVML not found: ...")
  std::vector<GpuHealth> gpus;  // one per device NVML lists
};

GpuHealthReport gpu_health();

}  // namespace cohort::env
