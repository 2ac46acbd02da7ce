#include "nccl_state.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

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
  if (failed_ || std::uncaught_exceptions() > 0) return;  // left to the exit (nccl_state.hpp)
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_);  // work queued on it finishes before it goes
  cudaStreamDestroy(stream_);
  ncclCommDestroy(comm_);
}

void NcclState::wait_for(cudaEvent_t event) {
  auto pause = std::chrono::microseconds(0);
  for (;;) {
    const cudaError_t rc = cudaEventQuery(event);
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) {
      failed_ = true;
      throw_cuda("cudaEventQuery", rc);
    }
    check_async_error();
    if (pause.count() == 0) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
    }
    pause = std::min<std::chrono::microseconds>(pause + std::chrono::microseconds(10),
                                                std::chrono::microseconds(500));
  }
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
