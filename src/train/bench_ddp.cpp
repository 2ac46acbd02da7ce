#include "cohort/train/bench_ddp.hpp"

#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <chrono>

#include "cohort/comm/bench.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/ddp/distributed_data_parallel.hpp"

namespace cohort::train {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

torch::nn::Sequential make_mlp(const std::vector<std::int64_t>& widths) {
  torch::nn::Sequential net;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    net->push_back(torch::nn::Linear(widths[i], widths[i + 1]));
    if (i + 2 < widths.size()) net->push_back(torch::nn::ReLU());
  }
  return net;
}

// Median step time of `steps` steps (after 3 warm-up steps); `ddp` may be null.
double time_steps(torch::nn::Sequential& net, ddp::DistributedDataParallel* ddp,
                  comm::Communicator& comm, const DdpBenchOptions& o, double* wait_ms) {
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.01));
  const auto x = torch::randn({o.batch, o.layers.front()});
  const auto y = torch::randint(0, o.layers.back(), {o.batch}, torch::kLong);
  std::vector<double> times, waits;
  for (int step = 0; step < o.steps + 3; ++step) {
    comm.barrier();
    const auto start = Clock::now();
    if (ddp) ddp->begin_step();
    sgd.zero_grad();
    torch::nn::functional::cross_entropy(net->forward(x), y).backward();
    if (ddp) ddp->finish_step();
    sgd.step();
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (step >= 3) {
      times.push_back(ms);
      if (ddp) waits.push_back(ddp->last_step().finish_wait_ms);
    }
  }
  if (wait_ms) *wait_ms = median(waits);
  return median(times);
}

}  // namespace

DdpBenchResult bench_ddp(const comm::MpiSession& session, const DdpBenchOptions& o) {
  at::set_num_threads(o.threads);
  auto comm = comm::make_communicator(session, comm::Backend::kMpi);
  torch::manual_seed(0);
  auto net = make_mlp(o.layers);
  DdpBenchResult r;
  r.ranks = comm->size();
  for (const auto& p : net->parameters()) r.parameters += p.numel();
  r.gradient_bytes = r.parameters * static_cast<std::int64_t>(sizeof(float));
  r.compute_ms = time_steps(net, nullptr, *comm, o, nullptr);
  for (const bool overlap : {!o.overlap, o.overlap}) {  // the reported setting last
    ddp::DdpOptions options;
    options.bucket_bytes = o.bucket_bytes;
    options.overlap = overlap;
    ddp::DistributedDataParallel ddp(*net, *comm, options);
    r.buckets = static_cast<int>(ddp.buckets().size());
    r.ddp_other_ms = r.ddp_ms;
    r.ddp_ms = time_steps(net, &ddp, *comm, o, &r.finish_wait_ms);
  }
  r.allreduce_ms = comm::raw_allreduce_ms(session, r.parameters, o.steps);
  r.samples_per_s = o.batch * r.ranks / (r.ddp_ms * 1e-3);
  r.floor_ratio = r.ddp_ms / (r.compute_ms + r.allreduce_ms);
  r.exposed_share = std::max(0.0, r.ddp_ms - r.compute_ms) / r.ddp_ms;
  r.hidden_fraction = std::clamp(1.0 - (r.ddp_ms - r.compute_ms) / r.allreduce_ms, 0.0, 1.0);
  return r;
}

}  // namespace cohort::train
