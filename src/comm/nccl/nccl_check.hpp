// COHORT_NCCL_CHECK / COHORT_CUDA_CHECK: every NCCL and CUDA runtime call goes through these,
// which throw naming the call and the library's error string: CommError (a peer lost, exit 77)
// for NCCL's own failures, DeviceError (a node fault, exit 78) for CUDA's and for NCCL's
// unhandled CUDA error.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "cohort/error.hpp"

#define COHORT_NCCL_CHECK(call)                                                                   \
  do {                                                                                            \
    const ncclResult_t cohort_nccl_rc_ = (call);                                                  \
    if (cohort_nccl_rc_ == ncclUnhandledCudaError) {                                              \
      COHORT_THROW(::cohort::DeviceError, #call,                                                  \
                   " failed: ", ncclGetErrorString(cohort_nccl_rc_));                             \
    }                                                                                             \
    if (cohort_nccl_rc_ != ncclSuccess) {                                                         \
      COHORT_THROW(::cohort::CommError, #call, " failed: ", ncclGetErrorString(cohort_nccl_rc_)); \
    }                                                                                             \
  } while (false)

#define COHORT_CUDA_CHECK(call)                                       \
  do {                                                                \
    const cudaError_t cohort_cuda_rc_ = (call);                       \
    if (cohort_cuda_rc_ != cudaSuccess) {                             \
      COHORT_THROW(::cohort::DeviceError, #call,                      \
                   " failed: ", cudaGetErrorString(cohort_cuda_rc_)); \
    }                                                                 \
  } while (false)
