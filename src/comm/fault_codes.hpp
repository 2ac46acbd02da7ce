// The cudaError_t and ncclResult_t values that comm::classify_* name (CUDA 12's driver_types.h,
// NCCL 2's nccl.h). Kept here as numbers so that the classification builds and is tested without
// CUDA; where CUDA is built, nccl_check.hpp checks each against the library's own enumerators.
#pragma once

namespace cohort::comm {

enum CudaCode : int {
  kCudaInvalidValue = 1,
  kCudaMemoryAllocation = 2,
  kCudaInitializationError = 3,
  kCudaInsufficientDriver = 35,
  kCudaDevicesUnavailable = 46,
  kCudaNoDevice = 100,
  kCudaInvalidDevice = 101,
  kCudaStartupFailure = 127,
  kCudaEccUncorrectable = 214,
  kCudaNvlinkUncorrectable = 220,
  kCudaIllegalAddress = 700,
  kCudaLaunchTimeout = 702,
  kCudaAssert = 710,
  kCudaHardwareStackError = 714,
  kCudaLaunchFailure = 719,
  kCudaSystemNotReady = 802,
  kCudaSystemDriverMismatch = 803,
};

enum NcclCode : int {
  kNcclUnhandledCudaError = 1,
  kNcclSystemError = 2,
  kNcclInternalError = 3,
  kNcclInvalidArgument = 4,
  kNcclInvalidUsage = 5,
  kNcclRemoteError = 6,
};

}  // namespace cohort::comm
