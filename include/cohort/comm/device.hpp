// The rank's CUDA device: chosen once at start-up (env::bind_gpu), then current on every thread
// Cohort starts that may touch CUDA (the communicator's worker, the watchdog, the checkpoint
// writer, the data loader's reader), as c10d's device guard does for its threads. A CUDA device
// is current per thread, not per process: a thread that never sets it runs on device 0 and, on
// a node whose ranks share one process image per GPU, makes a context there.
//
// Protocol: the process calls set_rank_device() once, before any CUDA work and before it starts
// threads; each thread Cohort starts calls make_rank_device_current() first. Without a CUDA
// build (the NCCL backend not compiled) both only record the choice; current_device() then
// answers nullopt.
#pragma once

#include <optional>

namespace cohort::comm {

// Whether this build can make a device current (CUDA and NCCL compiled in).
bool cuda_compiled();

// Records the rank's device ordinal (an index among the devices this process sees, as
// CUDA_VISIBLE_DEVICES numbers them) and makes it current on the calling thread. nullopt: a CPU
// rank (nothing is made current). Throws ConfigError when the ordinal is not a device this
// process sees (a configuration error: never requeued, never blamed on the node).
void set_rank_device(std::optional<int> ordinal);

// Asks the CUDA runtime how many devices it sees (cudaGetDeviceCount). Its failure is thrown as
// its fault class (docs/exit-codes.md): no device, an initialisation error or a device
// unavailable where Slurm allocated GPUs to the node is the node's fault (DeviceError, 78); a
// driver older than the toolkit is the job's configuration. 0 without CUDA compiled.
int cuda_runtime_devices();

// What set_rank_device() recorded.
std::optional<int> rank_device();

// Makes the recorded device current on the calling thread; nothing when none was recorded or
// the build has no CUDA. Never throws: a thread's first line calls it (a failure is left for the
// thread's first real CUDA call, which reports it).
void make_rank_device_current() noexcept;

// The device current on the calling thread (cudaGetDevice), nullopt without CUDA. For tests.
std::optional<int> current_device();

}  // namespace cohort::comm
