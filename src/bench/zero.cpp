#include "cohort/bench/zero.hpp"

#include <ATen/ops/tensor.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "bench/common.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/ddp/distributed_data_parallel.hpp"
#include "cohort/pipeline/stage.hpp"
#include "train/zero_units.hpp"

namespace cohort::bench {

// The trainer's names (and the settings and models it sees) unqualified: a benchmark of the
// trainer is written in its terms.
using namespace ::cohort::train;  // NOLINT(google-build-using-namespace)

namespace {

// One stage's copy of the model (same seed), its DDP and its AdamW over what the stage steps.
// The MLP runs as a pipeline::Stage of one block per linear layer (with its ReLU), as the
// trainer runs a block model: ZeRO 3's units.
struct Variant {
  int stage = 0;
  torch::nn::Sequential net;
  std::shared_ptr<pipeline::Stage> blocks;
  std::unique_ptr<ddp::DistributedDataParallel> ddp;
  std::unique_ptr<torch::optim::AdamW> adamw;
  std::vector<double> times;
};

// Each linear layer with the ReLU after it (the last has none): one block.
std::vector<pipeline::BlockSpec> mlp_blocks(const torch::nn::Sequential& net) {
  std::vector<pipeline::BlockSpec> blocks;
  const auto children = net->named_children();
  for (std::size_t i = 0; i < children.size(); ++i) {
    auto module = children[i].value();
    if (!module->as<torch::nn::Linear>()) continue;
    pipeline::BlockSpec block;
    block.name = "layer" + children[i].key();
    block.modules.emplace_back(children[i].key(), module);
    auto* linear = module->as<torch::nn::Linear>();
    const bool relu = i + 1 < children.size();
    block.forward = [linear, relu](const at::Tensor& x) {
      at::Tensor y = linear->forward(x);
      return relu ? y.relu() : y;
    };
    blocks.push_back(std::move(block));
  }
  return blocks;
}

std::unique_ptr<Variant> make_variant(const ZeroBenchOptions& o, comm::Communicator& comm,
                                      int stage) {
  torch::manual_seed(0);
  auto v = std::make_unique<Variant>();
  v->stage = stage;
  v->net = make_mlp(o.layers);
  v->blocks = std::make_shared<pipeline::Stage>(
      mlp_blocks(v->net), std::vector<int>{0, static_cast<int>(o.layers.size()) - 1}, 0);
  ddp::DdpOptions options;
  options.bucket_bytes = o.bucket_bytes;
  options.overlap = o.overlap;
  options.zero = stage;
  if (stage == 3) options.units = v->blocks->parameter_blocks();
  v->ddp = std::make_unique<ddp::DistributedDataParallel>(*v->blocks, comm, options);
  if (stage == 3) connect_zero3(*v->blocks, *v->ddp);
  std::vector<at::Tensor> stepped;
  if (stage == 0) {
    stepped = v->blocks->parameters();
  } else {
    for (const auto& piece : v->ddp->shard()) stepped.push_back(piece.value);
  }
  v->adamw = std::make_unique<torch::optim::AdamW>(stepped, torch::optim::AdamWOptions(1e-4));
  return v;
}

void step(Variant& v, comm::Communicator& comm, const at::Tensor& x, const at::Tensor& y,
          bool record) {
  comm.barrier();
  const auto start = Clock::now();
  v.ddp->begin_step();
  torch::nn::functional::cross_entropy(v.blocks->forward(x), y).backward();
  v.ddp->finish_step();
  v.adamw->step();
  v.ddp->gather_parameters();
  if (record) {
    v.times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
}

std::int64_t optimizer_bytes(torch::optim::AdamW& adamw) {
  std::int64_t bytes = 0;
  for (const auto& entry : adamw.state()) {
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*entry.second);
    bytes += static_cast<std::int64_t>(s.exp_avg().nbytes() + s.exp_avg_sq().nbytes());
  }
  return bytes;
}

// The stage's figures, each the most over the ranks.
ZeroStageFigures figures(Variant& v, comm::Communicator& comm, std::int64_t parameters) {
  const auto memory = v.ddp->memory();
  at::Tensor held =
      at::tensor({memory.parameter_bytes, memory.gradient_bytes, optimizer_bytes(*v.adamw),
                  memory.peak_bucket_bytes, memory.peak_gathered_bytes},
                 at::kLong);
  comm.all_reduce(held, {comm::ReduceOp::kMax});
  const auto* h = held.data_ptr<std::int64_t>();
  ZeroStageFigures f;
  f.stage = v.stage;
  f.parameter_bytes = h[0];
  f.gradient_bytes = h[1];
  f.optimizer_bytes = h[2];
  f.bucket_bytes = h[3];
  f.gathered_bytes = h[4];
  const double psi = static_cast<double>(parameters), n = comm.size();
  f.theory_bytes = v.stage == 0   ? 16 * psi
                   : v.stage == 1 ? 8 * psi + 8 * psi / n
                   : v.stage == 2 ? 4 * psi + 12 * psi / n
                                  : 16 * psi / n;
  f.held_ratio = static_cast<double>(h[0] + h[1] + h[2]) / f.theory_bytes;
  f.step_ms = median(v.times);
  return f;
}

}  // namespace

ZeroBenchResult bench_zero(const comm::MpiSession& session, const ZeroBenchOptions& o) {
  at::set_num_threads(o.threads);
  auto comm = comm::make_communicator(session, comm::Backend::kMpi);
  ZeroBenchResult r;
  r.ranks = comm->size();
  std::vector<std::unique_ptr<Variant>> variants;
  for (int stage = 0; stage <= 3; ++stage) variants.push_back(make_variant(o, *comm, stage));
  for (const auto& p : variants.front()->blocks->parameters()) r.parameters += p.numel();
  const auto batch = synthetic_batch(o.layers, o.batch);
  for (int i = 0; i < o.steps + 3; ++i) {  // three warm-up rounds; the first order rotates
    for (std::size_t k = 0; k < variants.size(); ++k) {
      step(*variants[(static_cast<std::size_t>(i) + k) % variants.size()], *comm, batch.inputs,
           batch.targets, i >= 3);
    }
  }
  for (auto& v : variants) r.stages.push_back(figures(*v, *comm, r.parameters));
  for (auto& f : r.stages) f.step_ratio = f.step_ms / r.stages.front().step_ms;
  return r;
}

}  // namespace cohort::bench
