// What a failed CUDA or NCCL call means for the job, and so which exit code it ends with
// (docs/exit-codes.md): the supervisor requeues on 77 and excludes the node on 78, so only a
// fault that another node or another start could cure may map there. A programming error
// (invalid usage, an unsupported dtype, an illegal address in a kernel) or a configuration
// error (a device ordinal that does not exist, a model that does not fit the GPU's memory)
// would fail the same way on every node: requeueing it would loop, and excluding the node would
// blacklist healthy hardware.
//
// The codes are the libraries' numeric values (cudaError_t, ncclResult_t), stable across
// releases; the CUDA build checks the ones named here against its headers (static_assert in
// src/comm/nccl/nccl_check.hpp), and the table is a pure function so that it is tested on
// machines without CUDA.
#pragma once

#include <optional>
#include <string>

#include "cohort/error.hpp"

namespace cohort::comm {

enum class FaultClass {
  kProgramming,    // a bug: the same on every node (exit 1)
  kConfiguration,  // the job's settings: the same on every node (exit 2)
  kPeer,           // a peer rank, its node or the network failed (exit 77: requeue)
  kNode,           // this node's GPU or driver failed (exit 78: exclude the node, requeue)
};

const char* to_string(FaultClass fault);

// cudaError_t's value. Unknown codes are programming errors: never requeued on a guess.
FaultClass classify_cuda_error(int code);

// The message cudaGetErrorString gives for a code the table names ("" for one it does not): the
// CUDA build checks each against the runtime, and LibTorch's errors are read by it.
const char* cuda_error_text(int code);

// A LibTorch error's message read as a CUDA, cuBLAS or cuDNN failure ("CUDA error: <runtime
// text>", "CUDA out of memory", "CUBLAS_STATUS_...", "CUDNN_STATUS_..."): its fault class, or
// nullopt when the message is none of those.
std::optional<FaultClass> classify_message(const std::string& what);

// ncclResult_t's value (ncclUnhandledCudaError, ncclSystemError, ...). `last_error`: NCCL's own
// account of it (ncclGetLastError), which for an unhandled CUDA error names the CUDA failure
// inside ("Cuda failure 2 'out of memory'"): that failure's class then, a node fault when the
// text names none the table knows.
// NCCL's invalid usage for two ranks of a node on one GPU ("Duplicate GPU detected", which
// Cohort's binding cannot always see: two lists naming one device differently) is the job's
// configuration.
FaultClass classify_nccl_result(int code, const std::string& last_error = "");

// What the user can do about the failure NCCL's `last_error` describes, or "" when Cohort knows
// nothing to add.
std::string nccl_advice(const std::string& last_error);

ExitCode exit_code_of(FaultClass fault);

// Throws the cohort::Error whose exit code the fault class gives, with `what` as its message.
[[noreturn]] void throw_fault(FaultClass fault, const std::string& what);

}  // namespace cohort::comm
