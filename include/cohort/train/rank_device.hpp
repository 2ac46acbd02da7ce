// The device a rank trains on, chosen once at start-up from the gradient backend,
// parallel.devices and the launcher's GPU binding (env::bind_gpu): a pure function, so that every
// case is tested on machines without a GPU.
//
// parallel.backend = mpi: nothing is made current and the placement is parallel.devices as given
// (empty: the host).
// parallel.backend = nccl: NCCL builds a rank's communicator on the device current when it is
// made, takes only tensors on that device, and refuses two ranks on one GPU. So the rank's GPU is
// the binding's ordinal (a shared binding is refused), made current before any communicator
// (comm::set_rank_device), and the model goes there: cuda:<ordinal>. When parallel.devices is
// given it must agree with it: one CUDA device, the rank's own (the communicator's device; `cuda`
// without an index means it). Several are refused: DDP's buckets and the communicator take one.
#pragma once

#include <c10/core/Device.h>

#include <optional>
#include <vector>

#include "cohort/env/gpu_binding.hpp"
#include "cohort/settings/config.hpp"

namespace cohort::train {

struct RankDevice {
  std::optional<int> cuda;           // the ordinal made current; none: a CPU rank
  std::vector<c10::Device> devices;  // where the model's blocks go, in order; empty: the host
  bool configured = false;           // `devices` is parallel.devices (blocks spread over them)
};

// `configured`: parallel.devices parsed (pipeline::parse_devices); `cuda_devices`: the CUDA
// devices LibTorch sees (0 for a CPU-only LibTorch). EnvironmentError for a binding without a GPU
// of the rank's own, ConfigError for a LibTorch without CUDA or parallel.devices contradicting
// the rank's device; each in one line.
RankDevice choose_rank_device(GradBackend backend, const std::vector<c10::Device>& configured,
                              const env::GpuBinding& binding, int cuda_devices);

}  // namespace cohort::train
