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
