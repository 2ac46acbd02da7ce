// COHORT_NCCL_CHECK / COHORT_CUDA_CHECK: every NCCL and CUDA runtime call goes through these,
// which throw naming the call and the library's error string, as the error's fault class says
// (comm::classify_nccl_result / classify_cuda_error, docs/exit-codes.md): a peer or network
// fault is a CommError (77, requeue), a fault of this node's GPU or driver a DeviceError (78, the
// node excluded), a configuration error a ConfigError (2), anything else a programming error (1),
// never requeued nor blamed on the node.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "../fault_codes.hpp"
#include "cohort/comm/faults.hpp"
#include "cohort/error.hpp"

namespace cohort::comm::nccl {

// The table's numbers are the libraries' own.
static_assert(kCudaInvalidValue == static_cast<int>(cudaErrorInvalidValue));
static_assert(kCudaMemoryAllocation == static_cast<int>(cudaErrorMemoryAllocation));
static_assert(kCudaInitializationError == static_cast<int>(cudaErrorInitializationError));
static_assert(kCudaInsufficientDriver == static_cast<int>(cudaErrorInsufficientDriver));
static_assert(kCudaDevicesUnavailable == static_cast<int>(cudaErrorDevicesUnavailable));
static_assert(kCudaNoDevice == static_cast<int>(cudaErrorNoDevice));
static_assert(kCudaInvalidDevice == static_cast<int>(cudaErrorInvalidDevice));
static_assert(kCudaStartupFailure == static_cast<int>(cudaErrorStartupFailure));
static_assert(kCudaEccUncorrectable == static_cast<int>(cudaErrorECCUncorrectable));
static_assert(kCudaNvlinkUncorrectable == static_cast<int>(cudaErrorNvlinkUncorrectable));
static_assert(kCudaIllegalAddress == static_cast<int>(cudaErrorIllegalAddress));
static_assert(kCudaLaunchTimeout == static_cast<int>(cudaErrorLaunchTimeout));
static_assert(kCudaAssert == static_cast<int>(cudaErrorAssert));
static_assert(kCudaHardwareStackError == static_cast<int>(cudaErrorHardwareStackError));
static_assert(kCudaLaunchFailure == static_cast<int>(cudaErrorLaunchFailure));
static_assert(kCudaSystemNotReady == static_cast<int>(cudaErrorSystemNotReady));
static_assert(kCudaSystemDriverMismatch == static_cast<int>(cudaErrorSystemDriverMismatch));
static_assert(kNcclUnhandledCudaError == static_cast<int>(ncclUnhandledCudaError));
static_assert(kNcclSystemError == static_cast<int>(ncclSystemError));
static_assert(kNcclInternalError == static_cast<int>(ncclInternalError));
static_assert(kNcclInvalidArgument == static_cast<int>(ncclInvalidArgument));
static_assert(kNcclInvalidUsage == static_cast<int>(ncclInvalidUsage));
static_assert(kNcclRemoteError == static_cast<int>(ncclRemoteError));

[[noreturn]] inline void throw_nccl(const char* call, ncclResult_t rc) {
  const char* last = ncclGetLastError(nullptr);  // NCCL's account; its comm argument is unused
  const std::string detail = last != nullptr ? last : "";
  const FaultClass fault = classify_nccl_result(static_cast<int>(rc), detail);
  const std::string advice = nccl_advice(detail);
  throw_fault(fault, ::cohort::detail::concat(
                         call, " failed: ", ncclGetErrorString(rc), detail.empty() ? "" : ": ",
                         detail, " (", to_string(fault), ")", advice.empty() ? "" : "; ", advice));
}

[[noreturn]] inline void throw_cuda(const char* call, cudaError_t rc) {
  const FaultClass fault = classify_cuda_error(static_cast<int>(rc));
  throw_fault(fault, ::cohort::detail::concat(call, " failed: ", cudaGetErrorString(rc), " (",
                                              to_string(fault), ")"));
}

}  // namespace cohort::comm::nccl

#define COHORT_NCCL_CHECK(call)                                 \
  do {                                                          \
    const ncclResult_t cohort_nccl_rc_ = (call);                \
    if (cohort_nccl_rc_ != ncclSuccess) {                       \
      ::cohort::comm::nccl::throw_nccl(#call, cohort_nccl_rc_); \
    }                                                           \
  } while (false)

#define COHORT_CUDA_CHECK(call)                                                                   \
  do {                                                                                            \
    const cudaError_t cohort_cuda_rc_ = (call);                                                   \
    if (cohort_cuda_rc_ != cudaSuccess) ::cohort::comm::nccl::throw_cuda(#call, cohort_cuda_rc_); \
  } while (false)
