// The NCCL backend's entry points: nccl_communicator.cpp and cuda_device.cpp when NCCL and CUDA
// are compiled in, nccl_absent.cpp if not.
#pragma once

#include <memory>
#include <optional>

#include "cohort/comm/communicator.hpp"
#include "cohort/comm/mpi_session.hpp"

namespace cohort::comm::nccl {

bool compiled();
std::unique_ptr<Communicator> make_communicator(const MpiSession& session, CommOptions options,
                                                std::shared_ptr<Watchdog> watchdog);

// cudaSetDevice(ordinal) on the calling thread; ConfigError when this process sees no such
// device. Without CUDA: nothing.
void set_current_device(int ordinal);
// The same for a thread's first line: false when it failed (or without CUDA), never throws.
bool try_set_current_device(int ordinal) noexcept;
// cudaGetDeviceCount through COHORT_CUDA_CHECK (its failure classified); 0 without CUDA.
int runtime_devices();
// cudaGetDevice on the calling thread; nullopt without CUDA or when it fails.
std::optional<int> current_device();

}  // namespace cohort::comm::nccl
