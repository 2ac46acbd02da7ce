// `cohort bench zero`: one MLP trained with AdamW under ZeRO stages 0 (plain DDP), 1, 2 and 3 in
// the same run, side by side (each stage its own copy of the model from the same seed, stepped
// in turn so that all see the same machine), to show what each stage holds and costs:
//   - bytes held per rank for parameters, gradients and optimizer state, counted from the
//     tensors themselves (the most over the ranks), beside the theory for Ψ fp32 parameters
//     trained with Adam over N ranks: 16Ψ (DDP), 4Ψ + 4Ψ + 8Ψ/N (stage 1), 4Ψ + 12Ψ/N (stage 2),
//     16Ψ/N (stage 3); the transient buffers are reported apart (the constant above the theory):
//     stage 2 and 3's gradient buckets, stage 3's gathered (whole) layers;
//   - the median step time of each stage and its ratio to DDP's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cohort/comm/mpi_session.hpp"

namespace cohort::bench {

struct ZeroBenchOptions {
  std::vector<std::int64_t> layers = {1024, 2048, 2048, 1024, 10};  // MLP widths
  std::int64_t batch = 32;                                          // per rank
  int steps = 20;   // measured steps (after warm-up)
  int threads = 1;  // torch intra-op threads per rank
  std::size_t bucket_bytes = 25u << 20;
  bool overlap = false;  // see DdpOptions::overlap
};

struct ZeroStageFigures {
  int stage = 0;
  std::int64_t parameter_bytes = 0;  // held by the rank holding most
  std::int64_t gradient_bytes = 0;   // persistent
  std::int64_t optimizer_bytes = 0;
  std::int64_t bucket_bytes = 0;    // stages 2, 3: the most transient gradient buckets at once
  std::int64_t gathered_bytes = 0;  // stage 3: the most whole (gathered) layers at once
  double theory_bytes = 0;          // parameters + gradients + optimizer state, in theory
  double held_ratio = 0;            // (parameters + gradients + optimizer) / theory
  double step_ms = 0;               // median
  double step_ratio = 0;            // against stage 0's
};

struct ZeroBenchResult {
  int ranks = 1;
  std::int64_t parameters = 0;
  std::vector<ZeroStageFigures> stages;  // 0, 1, 2, 3
};

ZeroBenchResult bench_zero(const comm::MpiSession& session, const ZeroBenchOptions& options);

}  // namespace cohort::bench
