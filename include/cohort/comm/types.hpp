// Options and enums shared by every communicator backend.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace cohort::comm {

enum class ReduceOp { kSum, kAvg, kMax, kMin };
const char* to_string(ReduceOp op);

enum class Backend { kMpi, kNccl };
const char* to_string(Backend backend);

// Per-call options. A zero timeout means the communicator's default.
struct CollectiveOptions {
  ReduceOp op = ReduceOp::kSum;
  std::chrono::milliseconds timeout{0};
};

// What a rank does when a collective outlives its timeout.
struct CommOptions {
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  // Before every collective, check that all ranks call the same operation with the same size and
  // dtype (one extra small all-gather per call). Also enabled by COHORT_COMM_DEBUG=1.
  bool debug_check = false;
  std::size_t flight_recorder_entries = 64;
  // Wait for all-reduce, broadcast and barrier by testing a non-blocking operation and sleeping
  // between tests (50 us, doubling up to 1 ms) instead of MPI's busy polling. For communicators
  // of background threads (the checkpoint writer): waiting there for a slower rank must not take
  // a core from training. Costs up to a millisecond of latency per call. MPI backend only.
  bool low_cpu_wait = false;
};

}  // namespace cohort::comm
