// What the train module's benchmarks share (bench_ddp, bench_zero, bench_ckpt, bench_monitor,
// bench_control): the median of measured times, a collective timing, and the plain MLP they
// train.
#pragma once

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <ATen/ops/tensor.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "cohort/comm/communicator.hpp"

namespace cohort::train::bench {

// The middle value (the upper one of an even count); 0 for none.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The largest of the ranks' values.
inline double slowest(comm::Communicator& comm, double seconds) {
  at::Tensor t = at::tensor({seconds}, at::kDouble);
  comm::CollectiveOptions max;
  max.op = comm::ReduceOp::kMax;
  comm.all_reduce(t, max);
  return t.item<double>();
}

// Every rank starts after a barrier; the slowest rank's time.
template <class Body>
double timed(comm::Communicator& comm, Body&& body) {
  comm.barrier();
  const auto start = Clock::now();
  body();
  return slowest(comm, seconds_since(start));
}

// Linear layers of these widths with ReLU between them.
inline torch::nn::Sequential make_mlp(const std::vector<std::int64_t>& widths) {
  torch::nn::Sequential net;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    net->push_back(torch::nn::Linear(widths[i], widths[i + 1]));
    if (i + 2 < widths.size()) net->push_back(torch::nn::ReLU());
  }
  return net;
}

}  // namespace cohort::train::bench
