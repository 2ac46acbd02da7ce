// What the bench module's benchmarks share (ddp, zero, ckpt, monitor, control): the median of
// measured times, a collective timing, the directory every rank writes into, and the plain MLP
// they train.
#pragma once

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "cohort/comm/communicator.hpp"
#include "cohort/io/files.hpp"
#include "common/stats.hpp"

namespace cohort::bench {

using stats::median;

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A directory under `base`, the same on every rank: "<base>/cohort-bench-<name>-<pid>" with rank
// 0's process id, made by rank 0 before any rank goes on (an IoError naming it, exit 3, when it
// cannot be). Collective; the bench's rank 0 removes it at the end. With each rank's own pid, a
// checkpoint's shards would scatter over as many directories, of which rank 0 removed only its
// own.
inline std::string shared_dir(comm::Communicator& comm, const std::string& base,
                              const std::string& name) {
  at::Tensor pid = at::tensor({static_cast<std::int64_t>(::getpid())}, at::kLong);
  comm.broadcast(pid, 0);
  const std::string dir =
      base + "/cohort-bench-" + name + "-" + std::to_string(pid.item<std::int64_t>());
  if (comm.rank() == 0) io::make_directories(dir);
  comm.barrier();
  return dir;
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

// The benchmarks' synthetic batch for an MLP of `layers` widths: `batch` random samples, drawn
// after the model (torch::manual_seed(0) then make_mlp()) so that every variant sees the same.
struct SyntheticBatch {
  at::Tensor inputs, targets;
};
inline SyntheticBatch synthetic_batch(const std::vector<std::int64_t>& layers, std::int64_t batch) {
  at::Tensor inputs = at::randn({batch, layers.front()});
  return {inputs, at::randint(0, layers.back(), {batch}, at::kLong)};
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

}  // namespace cohort::bench
