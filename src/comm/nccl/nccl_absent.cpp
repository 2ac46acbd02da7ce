#include "nccl_info.hpp"

namespace cohort::comm::nccl {

BackendInfo info() {
  BackendInfo result;
  result.name = "nccl";
  result.compiled = false;
  result.detail = "not compiled in (CUDA or nccl.h not found at configure time)";
  return result;
}

}  // namespace cohort::comm::nccl

#include "cohort/error.hpp"
#include "nccl_factory.hpp"

namespace cohort::comm::nccl {

bool compiled() { return false; }

std::unique_ptr<Communicator> make_communicator(const MpiSession&, CommOptions,
                                                std::shared_ptr<Watchdog>) {
  COHORT_THROW(ConfigError,
               "the NCCL backend is not compiled into this build (CUDA or nccl.h were not found "
               "at configure time); use CPU tensors with the MPI backend");
}

}  // namespace cohort::comm::nccl

namespace cohort::comm::nccl {

void set_current_device(int) {}
bool try_set_current_device(int) noexcept { return false; }
int runtime_devices() { return 0; }
std::optional<int> current_device() { return std::nullopt; }

}  // namespace cohort::comm::nccl
