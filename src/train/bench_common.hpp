// What the train module's benchmarks share (bench_ddp, bench_zero, bench_ckpt, bench_monitor):
// the median of measured times and the plain MLP they train.
#pragma once

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace cohort::train::bench {

// The middle value (the upper one of an even count); 0 for none.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
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
