// Facts about the LibTorch runtime this process uses (version, thread pools, CUDA).
#pragma once

#include <string>

namespace cohort::train {

struct TorchRuntime {
  std::string version;  // of the headers this build used (TORCH_VERSION)
  std::string library;  // the libtorch_cpu file really loaded
  int intra_op_threads = 0;
  int inter_op_threads = 0;
  bool cuda_available = false;
  int cuda_devices = 0;
};

TorchRuntime torch_runtime();

}  // namespace cohort::train
