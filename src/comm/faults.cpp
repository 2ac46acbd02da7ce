#include "cohort/comm/faults.hpp"

#include "fault_codes.hpp"

namespace cohort::comm {

const char* to_string(FaultClass fault) {
  switch (fault) {
    case FaultClass::kProgramming:
      return "programming error";
    case FaultClass::kConfiguration:
      return "configuration error";
    case FaultClass::kPeer:
      return "peer or network fault";
    case FaultClass::kNode:
      return "node fault";
  }
  return "?";
}

namespace {

struct CudaFault {
  int code;
  const char* text;  // cudaGetErrorString's (CUDA 12)
  FaultClass fault;
};

// The node's GPU, its memory, its links or its driver failing: another node can run the job. A
// device ordinal beyond those visible, more memory than the GPU holds, a toolkit newer than the
// cluster's driver (the same on every node of a uniform cluster): the job's settings. The rest,
// and anything not listed (invalid values, illegal addresses, device asserts, a launch failure
// or hardware stack error, which CUDA documents as a kernel's invalid access or overflow): a
// bug.
constexpr CudaFault kCudaFaults[] = {
    {kCudaInvalidValue, "invalid argument", FaultClass::kProgramming},
    {kCudaMemoryAllocation, "out of memory", FaultClass::kConfiguration},
    {kCudaInitializationError, "initialization error", FaultClass::kNode},
    {kCudaInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version",
     FaultClass::kConfiguration},
    {kCudaDevicesUnavailable, "CUDA-capable device(s) is/are busy or unavailable",
     FaultClass::kNode},
    {kCudaNoDevice, "no CUDA-capable device is detected", FaultClass::kNode},
    {kCudaInvalidDevice, "invalid device ordinal", FaultClass::kConfiguration},
    {kCudaStartupFailure, "startup failure in cuda runtime", FaultClass::kNode},
    {kCudaEccUncorrectable, "uncorrectable ECC error encountered", FaultClass::kNode},
    {kCudaNvlinkUncorrectable, "uncorrectable NVLink error detected during the execution",
     FaultClass::kNode},
    {kCudaIllegalAddress, "an illegal memory access was encountered", FaultClass::kProgramming},
    {kCudaLaunchTimeout, "the launch timed out and was terminated", FaultClass::kNode},
    {kCudaAssert, "device-side assert triggered", FaultClass::kProgramming},
    {kCudaHardwareStackError, "hardware stack error", FaultClass::kProgramming},
    {kCudaLaunchFailure, "unspecified launch failure", FaultClass::kProgramming},
    {kCudaSystemNotReady, "system not yet initialized", FaultClass::kNode},
    {kCudaSystemDriverMismatch, "system has unsupported display driver / cuda driver combination",
     FaultClass::kConfiguration},
};

// NCCL's warning when two ranks of a communicator share a GPU (init.cc, every release since 2.4),
// which ncclGetLastError returns with ncclInvalidUsage.
constexpr const char* kDuplicateGpu = "Duplicate GPU detected";

bool contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

FaultClass classify_cuda_error(int code) {
  for (const auto& row : kCudaFaults) {
    if (row.code == code) return row.fault;
  }
  return FaultClass::kProgramming;
}

const char* cuda_error_text(int code) {
  for (const auto& row : kCudaFaults) {
    if (row.code == code) return row.text;
  }
  return "";
}

std::optional<FaultClass> classify_message(const std::string& what) {
  if (contains(what, "CUDA out of memory") || contains(what, "_STATUS_ALLOC_FAILED")) {
    return FaultClass::kConfiguration;
  }
  // The libraries ran a valid call and the GPU failed it, or could not start.
  // cuBLAS's handle that cannot be made is almost always memory running out.
  if (contains(what, "CUBLAS_STATUS_NOT_INITIALIZED")) return FaultClass::kConfiguration;
  for (const char* node : {"CUBLAS_STATUS_EXECUTION_FAILED", "CUBLAS_STATUS_INTERNAL_ERROR",
                           "CUDNN_STATUS_EXECUTION_FAILED", "CUDNN_STATUS_INTERNAL_ERROR"}) {
    if (contains(what, node)) return FaultClass::kNode;
  }
  if (contains(what, "CUBLAS_STATUS_") || contains(what, "CUDNN_STATUS_")) {
    return FaultClass::kProgramming;  // bad parameters, unsupported shapes or types
  }
  const auto at = what.find("CUDA error: ");
  if (at == std::string::npos) return std::nullopt;
  const std::string text = what.substr(at + 12);
  for (const auto& row : kCudaFaults) {
    if (text.rfind(row.text, 0) == 0) return row.fault;
  }
  return FaultClass::kProgramming;
}

FaultClass classify_nccl_result(int code, const std::string& last_error) {
  switch (code) {
    case kNcclUnhandledCudaError:  // a CUDA call inside NCCL failed: which one says its class
      for (const auto& row : kCudaFaults) {
        if (contains(last_error, row.text)) return row.fault;
      }
      return FaultClass::kNode;
    // A system call (socket, shared memory) failed: most often a peer's connection broke. It
    // is also a too small /dev/shm or a wrong NCCL_SOCKET_IFNAME; those fail again after the
    // requeue, which the restart budget (slurm.max_failures) bounds.
    case kNcclSystemError:
    case kNcclRemoteError:  // a peer reported a failure
      return FaultClass::kPeer;
    case kNcclInternalError:  // NCCL's own bug or a memory corruption ("message truncated")
      return FaultClass::kProgramming;
    case kNcclInvalidUsage:  // two ranks of a node on one GPU: the job's binding, not a bug
      return contains(last_error, kDuplicateGpu) ? FaultClass::kConfiguration
                                                 : FaultClass::kProgramming;
    default:  // invalid argument, anything unknown: a bug
      return FaultClass::kProgramming;
  }
}

std::string nccl_advice(const std::string& last_error) {
  if (!contains(last_error, kDuplicateGpu)) return "";
  return "two ranks of this node were given the same GPU, and NCCL takes one rank per GPU: give "
         "each task its own (srun --gpus-per-task=1, or as many GPUs on the node as ranks), and "
         "check that no CUDA_VISIBLE_DEVICES names one GPU twice (an index and its UUID)";
}

ExitCode exit_code_of(FaultClass fault) {
  switch (fault) {
    case FaultClass::kProgramming:
      return ExitCode::kInternal;
    case FaultClass::kConfiguration:
      return ExitCode::kUsage;
    case FaultClass::kPeer:
      return ExitCode::kPeerLost;
    case FaultClass::kNode:
      return ExitCode::kNodeFault;
  }
  return ExitCode::kInternal;
}

void throw_fault(FaultClass fault, const std::string& what) {
  switch (fault) {
    case FaultClass::kProgramming:
      throw Error(what, ExitCode::kInternal);
    case FaultClass::kConfiguration:
      throw ConfigError(what);
    case FaultClass::kPeer:
      throw CommError(what);
    case FaultClass::kNode:
      throw DeviceError(what);
  }
  throw Error(what, ExitCode::kInternal);
}

}  // namespace cohort::comm
