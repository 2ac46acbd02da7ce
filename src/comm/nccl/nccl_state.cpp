#include "nccl_state.hpp"

#include <exception>

#include "nccl_check.hpp"

namespace cohort::comm::nccl {

NcclState::NcclState(ncclComm_t comm, int device) : comm_(comm), device_(device) {
  const cudaError_t rc = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
  if (rc != cudaSuccess) {
    ncclCommAbort(comm_);
    throw_cuda("cudaStreamCreateWithFlags", rc);
  }
}

NcclState::~NcclState() {
  // Return codes ignored: destructors never throw, and at teardown no one is left to tell.
  cudaSetDevice(device_);
  if (failed_ || std::uncaught_exceptions() > 0) {
    ncclCommAbort(comm_);  // frees what it holds without waiting for any peer
    cudaStreamDestroy(stream_);
    return;
  }
  cudaStreamSynchronize(stream_);  // work queued on it finishes before it goes
  cudaStreamDestroy(stream_);
  ncclCommDestroy(comm_);
}

void NcclState::check_async_error() {
  ncclResult_t async = ncclSuccess;
  const ncclResult_t rc = ncclCommGetAsyncError(comm_, &async);
  if (rc != ncclSuccess || async != ncclSuccess) {
    failed_ = true;
    throw_nccl("ncclCommGetAsyncError", rc != ncclSuccess ? rc : async);
  }
}

}  // namespace cohort::comm::nccl
