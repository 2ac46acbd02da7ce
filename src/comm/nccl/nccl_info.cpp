#include "nccl_info.hpp"

#include <string>

#include "nccl_check.hpp"

namespace cohort::comm::nccl {

BackendInfo info() {
  BackendInfo result;
  result.name = "nccl";
  result.compiled = true;
  int version = 0;
  COHORT_NCCL_CHECK(ncclGetVersion(&version));
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  result.version = std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) +
                   "." + std::to_string(version % 100);
  // Both as loaded: the runtime library this process linked, the driver the node has.
  int runtime = 0, driver = 0;
  const auto text = [](int v) {
    return v == 0 ? std::string("none")
                  : std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  };
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  result.cuda = "runtime " + text(runtime) + ", driver " + text(driver);
  // No device is a normal state on CPU nodes, not an error: report why.
  const cudaError_t rc = cudaGetDeviceCount(&result.devices);
  if (rc != cudaSuccess) {
    result.devices = 0;
    result.detail = std::string("no CUDA device: ") + cudaGetErrorString(rc);
  } else {
    result.detail = "CUDA tensors";
  }
  return result;
}

}  // namespace cohort::comm::nccl
