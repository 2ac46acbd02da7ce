// Resource use of this process and of its GPU, sampled at the monitor's summaries (not every
// step: each sample costs a few system calls, or NVML calls that take up to a millisecond).
//
// ProcessSampler reads /proc/self/stat (user + system CPU time) and /proc/self/statm (resident
// pages): CPU utilisation is CPU seconds per wall second since the previous sample (1.0 = one
// core busy), so a rank with 4 threads can show up to 4.
//
// GpuSampler loads NVML with dlopen("libnvidia-ml.so.1") when it is constructed: a CPU build and a
// machine without the driver run, and available() says why there is nothing (why_not()).
// Sampling: utilisation (percent of time a kernel ran over NVML's last period), memory used and
// total, power. The device is the CUDA device this rank uses, translated through
// CUDA_VISIBLE_DEVICES (NVML numbers all of the node's devices).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace cohort::monitor {

struct ProcessSample {
  double cpu_util = 0;  // cores busy since the previous sample
  double rss_bytes = 0;
  double host_load = 0;   // the host's load average over the last minute (/proc/loadavg)
  double host_cores = 0;  // the host's online CPUs
};

class ProcessSampler {
 public:
  ProcessSampler();
  ProcessSample sample();

 private:
  double last_cpu_seconds_ = 0;
  std::chrono::steady_clock::time_point last_{};
};

struct GpuSample {
  bool available = false;
  double util_percent = 0;
  double memory_used_bytes = 0;
  double memory_total_bytes = 0;
  double power_watts = 0;
};

class GpuSampler {
 public:
  // `cuda_device`: the CUDA ordinal this rank uses; negative: no GPU (nothing is loaded).
  explicit GpuSampler(int cuda_device);
  ~GpuSampler();
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;

  bool available() const;
  const std::string& why_not() const;
  GpuSample sample();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The NVML index of CUDA device `cuda_device` given CUDA_VISIBLE_DEVICES (`visible`, "" when
// unset): its entry when that is a number, else `cuda_device` itself. -1 when the entry is a UUID
// (resolved through NVML by the sampler).
int nvml_index(int cuda_device, const std::string& visible);

}  // namespace cohort::monitor
