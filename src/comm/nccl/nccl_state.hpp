// What an NCCL communicator and its operations in flight share: the ncclComm_t and its stream.
// Held by the communicator and by every Work it issued (shared ownership), so that a Work that
// outlives its communicator still queries a live stream and communicator.
//
// Release: normally the stream is synchronised, then ncclCommDestroy. On a failing rank (an
// NCCL or CUDA error seen on this communicator, or the communicator destroyed while an exception
// unwinds) both could wait forever for peers that will never come (the stream's operations wait
// for them, and ncclCommDestroy synchronises with the node's other ranks), and so can
// ncclCommAbort (recent NCCL waits for the node's other ranks to abort too, and freeing its
// memory waits for every kernel on the device, another communicator's stuck one included): the
// handles are then left to the process's exit, which comes next, so that the rank gets to print
// its error and end.
#pragma once

#include <atomic>
#include <memory>

#include <cuda_runtime_api.h>
#include <nccl.h>

namespace cohort::comm::nccl {

class NcclState {
 public:
  // Takes `comm` (aborted if the stream cannot be made).
  NcclState(ncclComm_t comm, int device);
  ~NcclState();
  NcclState(const NcclState&) = delete;
  NcclState& operator=(const NcclState&) = delete;

  ncclComm_t comm() const { return comm_; }
  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }
  void mark_failed() { failed_ = true; }
  bool failed() const { return failed_; }

  // Throws (by fault class) when NCCL reports an asynchronous error on this communicator (a peer
  // lost mid-operation); marks the state failed first.
  void check_async_error();
  // Until `event` has passed: polls it and the asynchronous error in turn (yield, then sleeps
  // growing to 0.5 ms), so that a lost peer ends the wait with an error.
  void wait_for(cudaEvent_t event);

 private:
  ncclComm_t comm_;
  cudaStream_t stream_ = nullptr;
  int device_;
  std::atomic<bool> failed_{false};
};

using NcclStatePtr = std::shared_ptr<NcclState>;

}  // namespace cohort::comm::nccl
