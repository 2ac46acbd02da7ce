// The rank's device made current on a thread (comm/device.hpp), with CUDA.
#include <string>

#include "cohort/env/environment.hpp"
#include "nccl_check.hpp"
#include "nccl_factory.hpp"

namespace cohort::comm::nccl {

void set_current_device(int ordinal) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  COHORT_CHECK(
      rc == cudaSuccess && count > 0, ConfigError, "the rank's GPU is cuda:", ordinal,
      " but this process sees no CUDA device (", cudaGetErrorString(rc), "; CUDA_VISIBLE_DEVICES=",
      env::Environment::from_process().get("CUDA_VISIBLE_DEVICES").value_or("(unset)"), ")");
  COHORT_CHECK(ordinal >= 0 && ordinal < count, ConfigError, "the rank's GPU is cuda:", ordinal,
               " but this process sees ", count, " device(s) (CUDA_VISIBLE_DEVICES=",
               env::Environment::from_process().get("CUDA_VISIBLE_DEVICES").value_or("(unset)"),
               ")");
  COHORT_CUDA_CHECK(cudaSetDevice(ordinal));
}

int runtime_devices() {
  int count = 0;
  COHORT_CUDA_CHECK(cudaGetDeviceCount(&count));
  return count;
}

bool try_set_current_device(int ordinal) noexcept { return cudaSetDevice(ordinal) == cudaSuccess; }

std::optional<int> current_device() {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) return std::nullopt;
  return device;
}

}  // namespace cohort::comm::nccl
