// RAII over the CUDA and NCCL handles the NCCL backend holds, as Hid does for HDF5 and UniqueFd
// for descriptors: each is created through its checked call and released in its destructor on
// every path, including a check that throws half-way through a constructor. Destructors never
// throw: a failed release at teardown has no one left to tell.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <utility>

#include "nccl_check.hpp"

namespace cohort::comm::nccl {

// Moves leave the source empty; T's null is its value-initialised state.
template <typename T, void (*Release)(T)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T handle) : handle_(handle) {}
  ~Handle() {
    if (handle_ != T{}) Release(handle_);
  }
  Handle(Handle&& other) noexcept : handle_(std::exchange(other.handle_, T{})) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      if (handle_ != T{}) Release(handle_);
      handle_ = std::exchange(other.handle_, T{});
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  T get() const { return handle_; }

 private:
  T handle_{};
};

inline void destroy_event(cudaEvent_t e) { cudaEventDestroy(e); }
inline void destroy_stream(cudaStream_t s) {
  cudaStreamSynchronize(s);  // work queued on it finishes before it goes
  cudaStreamDestroy(s);
}
inline void free_device(void* p) { cudaFree(p); }
inline void destroy_comm(ncclComm_t c) { ncclCommDestroy(c); }

using CudaEvent = Handle<cudaEvent_t, destroy_event>;
using CudaStream = Handle<cudaStream_t, destroy_stream>;
using DeviceBuffer = Handle<void*, free_device>;
using NcclComm = Handle<ncclComm_t, destroy_comm>;

inline CudaEvent make_event() {
  cudaEvent_t event = nullptr;
  COHORT_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return CudaEvent(event);
}

inline CudaStream make_stream() {
  cudaStream_t stream = nullptr;
  COHORT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return CudaStream(stream);
}

inline DeviceBuffer make_device_buffer(std::size_t bytes) {
  void* p = nullptr;
  COHORT_CUDA_CHECK(cudaMalloc(&p, bytes));
  return DeviceBuffer(p);
}

}  // namespace cohort::comm::nccl
