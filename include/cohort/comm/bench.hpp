// `cohort bench allreduce`: Cohort's all-reduce against raw MPI_Allreduce on the same buffers, in
// the same run, interleaved iteration by iteration so that both see the same machine state. With
// the NCCL backend Cohort's buffer lives on the GPU and the baseline is MPI_Allreduce on a host
// buffer of the same size: what the run would do without NCCL.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "cohort/comm/communicator.hpp"
#include "cohort/comm/mpi_session.hpp"

namespace cohort::comm {

struct AllreduceBenchRow {
  std::size_t bytes = 0;
  int iterations = 0;
  double cohort_ms = 0;        // median of the blocking all_reduce
  double cohort_async_ms = 0;  // median of all_reduce_async + wait (through the worker thread)
  double raw_ms = 0;           // median of MPI_Allreduce on the same (host: an equal) buffer
  double algbw_gbs = 0;        // bytes / cohort time
  double busbw_gbs = 0;        // algbw * 2 (n - 1) / n
  double ratio = 0;            // raw time / cohort time: >= 1 means Cohort is as fast as raw MPI
};

struct AllreduceBenchOptions {
  std::size_t min_bytes = 4 << 10;
  std::size_t max_bytes = 256 << 20;
  double seconds_per_size = 1.0;   // time budget per size, both variants together
  c10::Device device = c10::kCPU;  // where Cohort's buffer lives: the communicator's device
};

// One raw MPI_Allreduce (float32 sum, in place) of a persistent buffer on the session's world,
// timed: the baseline other benchmarks interleave with their own steps. Collective.
class RawAllreduce {
 public:
  RawAllreduce(const MpiSession& session, std::int64_t numel);
  double run_ms();

 private:
  const MpiSession& session_;
  at::Tensor buffer_;
};

// Collective over the communicator (float32 sums); a CUDA device is synchronised before each
// of Cohort's timings ends.
std::vector<AllreduceBenchRow> bench_allreduce(Communicator& comm, const MpiSession& session,
                                               const AllreduceBenchOptions& options);

// `cohort bench allreduce --json`: ranks, backend, malloc_tuning and a row per message size.
nlohmann::json to_json(const std::vector<AllreduceBenchRow>& rows, int ranks,
                       const std::string& backend, const char* malloc_tuning);

}  // namespace cohort::comm
