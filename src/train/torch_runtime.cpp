#include "cohort/train/torch_runtime.hpp"

// Narrow headers on purpose: <torch/torch.h> costs ~20 s per TU on the build machines.
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/version.h>

namespace cohort::train {

TorchRuntime torch_runtime() {
  TorchRuntime info;
  info.version = TORCH_VERSION;
  info.intra_op_threads = at::get_num_threads();
  info.inter_op_threads = at::get_num_interop_threads();
  info.cuda_available = torch::cuda::is_available();
  info.cuda_devices = static_cast<int>(torch::cuda::device_count());
  return info;
}

}  // namespace cohort::train
