// `cohort bench ddp`: one MLP trained three ways in the same run, to show what DDP costs:
//   compute-only   forward + backward + SGD step, no communication
//   ddp            the same step under DistributedDataParallel
//   raw all-reduce one MPI_Allreduce of all gradient bytes (what synchronisation must cost at
//   least)
// The floor: ddp <= 1.05 x (compute-only + raw all-reduce). The all-reduce hidden behind backward
// is 1 - (ddp - compute-only) / raw all-reduce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cohort/comm/mpi_session.hpp"

namespace cohort::bench {

struct DdpBenchOptions {
  std::vector<std::int64_t> layers = {1024, 2048, 2048, 1024, 10};  // MLP widths
  std::int64_t batch = 32;                                          // per rank
  int steps = 30;   // measured steps (after warm-up)
  int threads = 1;  // torch intra-op threads per rank
  std::size_t bucket_bytes = 25u << 20;
  bool overlap = false;  // see DdpOptions::overlap; bench ddp reports both
};

struct DdpBenchResult {
  int ranks = 1;
  std::int64_t parameters = 0;
  std::int64_t gradient_bytes = 0;
  int buckets = 0;
  double compute_ms = 0;
  double ddp_ms = 0;        // with DdpBenchOptions::overlap
  double ddp_other_ms = 0;  // with the opposite setting, for comparison (its own pass)
  double other_floor_ratio = 0;
  double allreduce_ms = 0;
  double finish_wait_ms = 0;   // exposed communication measured inside DDP
  double samples_per_s = 0;    // global samples/s of the DDP model stepping alone
  double floor_ratio = 0;      // ddp / (compute + allreduce), must be <= 1.05
  double exposed_share = 0;    // (ddp - compute) / ddp
  double hidden_fraction = 0;  // 1 - (ddp - compute) / allreduce, clamped to [0, 1]
};

DdpBenchResult bench_ddp(const comm::MpiSession& session, const DdpBenchOptions& options);

}  // namespace cohort::bench
