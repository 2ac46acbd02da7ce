// Facts about the LibTorch runtime this process uses (version, thread pools, CUDA, oneDNN).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace cohort::ops {

struct TorchRuntime {
  std::string version;  // of the headers this build used (TORCH_VERSION)
  std::string library;  // the libtorch_cpu file really loaded
  int intra_op_threads = 0;
  int inter_op_threads = 0;
  bool cuda_available = false;
  int cuda_devices = 0;
  bool onednn_convolutions = false;  // LibTorch's oneDNN path is on (convolutions run on oneDNN)
};

TorchRuntime torch_runtime();
// `cohort env --json`'s "torch": version, library, the thread pools' sizes, cuda_available.
nlohmann::json to_json(const TorchRuntime& runtime);

// Turns LibTorch's oneDNN path off when the loaded oneDNN is a release whose convolution backward
// is known to be wrong (env::onednn_convolutions_wrong): LibTorch then runs its own convolution
// kernels (im2col and BLAS), right and slower. Called by cohort's main and by the Trainer (for
// programs of their own); idempotent. Returns why it turned oneDNN off, or "".
std::string guard_convolutions();

}  // namespace cohort::ops
