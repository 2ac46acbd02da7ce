#include "cohort/ops/torch_runtime.hpp"

// Narrow headers on purpose: <torch/torch.h> costs ~20 s per TU on the build machines.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>

#include "cohort/env/onednn.hpp"
#include "cohort/env/system_info.hpp"

namespace cohort::ops {

TorchRuntime torch_runtime() {
  TorchRuntime info;
  info.version = TORCH_VERSION;
  // libtorch_cpu's soname carries its release (libtorch_cpu.so.2.6): the file tells which one
  // the dynamic linker picked, which a build's headers cannot.
  info.library = env::library_of(reinterpret_cast<const void*>(&at::get_num_threads));
  info.intra_op_threads = at::get_num_threads();
  info.inter_op_threads = at::get_num_interop_threads();
  info.cuda_available = torch::cuda::is_available();
  info.cuda_devices = static_cast<int>(torch::cuda::device_count());
  info.onednn_convolutions = at::globalContext().userEnabledMkldnn();
  return info;
}

nlohmann::json to_json(const TorchRuntime& runtime) {
  return {{"version", runtime.version},
          {"library", runtime.library},
          {"intra_op_threads", runtime.intra_op_threads},
          {"inter_op_threads", runtime.inter_op_threads},
          {"cuda_available", runtime.cuda_available}};
}

std::string guard_convolutions() {
  const env::OneDnnInfo onednn = env::onednn_info();
  if (!env::onednn_convolutions_wrong(onednn)) return "";
  at::globalContext().setUserEnabledMkldnn(false);
  return "oneDNN " + onednn.version +
         "'s convolution backward is wrong: LibTorch's own kernels run";
}

}  // namespace cohort::ops
