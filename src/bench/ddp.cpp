#include "cohort/bench/ddp.hpp"

#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <chrono>

#include "bench/common.hpp"
#include "cohort/comm/bench.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/ddp/distributed_data_parallel.hpp"

namespace cohort::bench {

namespace {

// One way of training the same MLP: its own model copy (same seed), optimizer and maybe DDP.
struct Variant {
  torch::nn::Sequential net;
  std::unique_ptr<torch::optim::SGD> sgd;
  std::unique_ptr<ddp::DistributedDataParallel> ddp;
  std::vector<double> times, waits;
};

Variant make_variant(const DdpBenchOptions& o, comm::Communicator* comm, bool overlap) {
  torch::manual_seed(0);
  Variant v;
  v.net = make_mlp(o.layers);
  v.sgd = std::make_unique<torch::optim::SGD>(v.net->parameters(), torch::optim::SGDOptions(0.01));
  if (comm) {
    ddp::DdpOptions options;
    options.bucket_bytes = o.bucket_bytes;
    options.overlap = overlap;
    v.ddp = std::make_unique<ddp::DistributedDataParallel>(*v.net, *comm, options);
  }
  return v;
}

void step(Variant& v, comm::Communicator& comm, const torch::Tensor& x, const torch::Tensor& y,
          bool record) {
  comm.barrier();
  const auto start = Clock::now();
  if (v.ddp) v.ddp->begin_step();
  ddp::zero_grad_in_place(v.net->parameters());  // the same in every LibTorch release
  torch::nn::functional::cross_entropy(v.net->forward(x), y).backward();
  if (v.ddp) v.ddp->finish_step();
  v.sgd->step();
  if (!record) return;
  v.times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  if (v.ddp) v.waits.push_back(v.ddp->last_step().finish_wait_ms);
}

struct Pass {
  double compute_ms, ddp_ms, allreduce_ms, wait_ms;
  int buckets;
};

// One measurement pass: a compute-only copy of the model, a DDP copy, and the raw all-reduce of
// the same gradient bytes, stepped in turn (rotating which goes first) so that all three see the
// same machine state.
Pass measure(const comm::MpiSession& session, comm::Communicator& comm, const DdpBenchOptions& o,
             bool overlap, std::int64_t parameters) {
  std::vector<Variant> variants;
  variants.push_back(make_variant(o, nullptr, false));
  variants.push_back(make_variant(o, &comm, overlap));
  comm::RawAllreduce raw(session, parameters);
  std::vector<double> raw_times;
  const auto [x, y] = synthetic_batch(o.layers, o.batch);
  for (int i = 0; i < o.steps + 3; ++i) {
    const bool record = i >= 3;  // three warm-up rounds
    for (int k = 0; k < 3; ++k) {
      const int which = (i + k) % 3;
      if (which == 2) {
        const double ms = raw.run_ms();
        if (record) raw_times.push_back(ms);
      } else {
        step(variants[static_cast<size_t>(which)], comm, x, y, record);
      }
    }
  }
  return {median(variants[0].times), median(variants[1].times), median(raw_times),
          median(variants[1].waits), static_cast<int>(variants[1].ddp->buckets().size())};
}

}  // namespace

DdpBenchResult bench_ddp(const comm::MpiSession& session, const DdpBenchOptions& o) {
  at::set_num_threads(o.threads);
  auto comm = comm::make_communicator(session, comm::Backend::kMpi);
  DdpBenchResult r;
  r.ranks = comm->size();
  for (const auto& p : make_mlp(o.layers)->parameters()) r.parameters += p.numel();
  r.gradient_bytes = r.parameters * static_cast<std::int64_t>(sizeof(float));
  const Pass other = measure(session, *comm, o, !o.overlap, r.parameters);
  const Pass main = measure(session, *comm, o, o.overlap, r.parameters);
  r.buckets = main.buckets;
  r.compute_ms = main.compute_ms;
  r.ddp_ms = main.ddp_ms;
  r.finish_wait_ms = main.wait_ms;
  r.allreduce_ms = main.allreduce_ms;
  r.ddp_other_ms = other.ddp_ms;
  r.other_floor_ratio = other.ddp_ms / (other.compute_ms + other.allreduce_ms);
  // Throughput from the DDP model stepping alone, as a peer framework would run it (in the passes
  // above three models share the caches).
  Variant alone = make_variant(o, comm.get(), o.overlap);
  const auto batch = synthetic_batch(o.layers, o.batch);
  for (int i = 0; i < o.steps + 3; ++i) step(alone, *comm, batch.inputs, batch.targets, i >= 3);
  r.samples_per_s = o.batch * r.ranks / (median(alone.times) * 1e-3);
  r.floor_ratio = r.ddp_ms / (r.compute_ms + r.allreduce_ms);
  r.exposed_share = std::max(0.0, r.ddp_ms - r.compute_ms) / r.ddp_ms;
  r.hidden_fraction = std::clamp(1.0 - (r.ddp_ms - r.compute_ms) / r.allreduce_ms, 0.0, 1.0);
  return r;
}

}  // namespace cohort::bench
