#include "cohort/pipeline/bench.hpp"

#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>
#include <torch/autograd.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "cohort/error.hpp"
#include "cohort/pipeline/executor.hpp"

namespace cohort::pipeline {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Identity that takes `ms` in forward and twice that in backward: a stage of known cost.
struct Wait : public torch::autograd::Function<Wait> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, double ms) {
    ctx->saved_data["ms"] = ms;
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
    return x.clone();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const double ms = ctx->saved_data["ms"].toDouble();
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(2 * ms));
    return {grads[0], at::Tensor()};
  }
};

// One schedule and one M: the mean bubble of this stage over the steps after the first.
PipelineBenchRow run_case(comm::Communicator& world, const PipelineBenchOptions& o,
                          Schedule schedule, int m, torch::nn::Sequential& layers) {
  const int p = world.size(), s = world.rank();
  ExecutorOptions eo;
  eo.schedule = schedule;
  eo.micro_batches = m;
  eo.stage = s;
  eo.stages = p;
  eo.input_shape = eo.output_shape = {o.width};
  Executor executor(p > 1 ? &world : nullptr, eo);
  // Requiring grad, so that the first stage has a graph to run backward through in sleep mode.
  const std::vector<at::Tensor> inputs(
      static_cast<std::size_t>(m), at::randn({o.micro_batch_size, o.width}).requires_grad_(true));
  StepHooks hooks;
  hooks.forward = [&](int, const at::Tensor& x) {
    if (o.work == "sleep") return Wait::apply(x, o.forward_ms);
    return layers->forward(x);
  };
  hooks.loss = [](int, const at::Tensor& out) { return out.mean(); };
  double bubble = 0, step = 0;
  int peak = 0;
  for (int i = 0; i <= o.steps; ++i) {
    layers->zero_grad();
    world.barrier();  // every stage starts the step together
    const auto stats = executor.train_step(inputs, hooks);
    // The step lasts until its last stage is done: the bubble is idle time against that.
    at::Tensor makespan = at::zeros({1}, at::kDouble);
    makespan[0] = stats.step_s;
    world.all_reduce(makespan, {comm::ReduceOp::kMax});
    if (i == 0) continue;  // warm-up
    const double span = makespan.item<double>();
    bubble += 1.0 - stats.compute_s / span;
    step += span;
    peak = std::max(peak, stats.peak_in_flight);
  }
  at::Tensor sums = at::zeros({2}, at::kDouble);
  sums[0] = bubble / o.steps;
  sums[1] = step / o.steps;
  world.all_reduce(sums);
  at::Tensor most = at::zeros({1}, at::kDouble);
  most[0] = peak;
  world.all_reduce(most, {comm::ReduceOp::kMax});
  PipelineBenchRow row;
  row.schedule = schedule;
  row.micro_batches = m;
  row.theory = bubble_fraction_theory(p, m);
  row.measured = sums[0].item<double>() / p;
  row.step_ms = 1e3 * sums[1].item<double>() / p;
  row.peak_in_flight = static_cast<int>(most.item<double>());
  return row;
}

}  // namespace

std::vector<PipelineBenchRow> bench_pipeline(comm::Communicator& world,
                                             const PipelineBenchOptions& o) {
  COHORT_CHECK(o.work == "sleep" || o.work == "compute", ConfigError,
               "bench pipeline: --work is sleep or compute, not '", o.work, "'");
  COHORT_CHECK(!o.micro_batches.empty() && o.steps >= 1, ConfigError,
               "bench pipeline: give micro-batch counts and at least one step");
  torch::nn::Sequential layers;
  for (int i = 0; i < o.layers; ++i) {
    layers->push_back(torch::nn::Linear(o.width, o.width));
    layers->push_back(torch::nn::ReLU());
  }
  std::vector<PipelineBenchRow> rows;
  for (const auto schedule : {Schedule::kGpipe, Schedule::kOneFOneB}) {
    for (const int m : o.micro_batches) rows.push_back(run_case(world, o, schedule, m, layers));
  }
  return rows;
}

nlohmann::json to_json(const std::vector<PipelineBenchRow>& rows,
                       const PipelineBenchOptions& options, int stages) {
  using nlohmann::json;
  json out = json::array();
  for (const auto& r : rows) {
    out.push_back({{"schedule", to_string(r.schedule)},
                   {"stages", stages},
                   {"micro_batches", r.micro_batches},
                   {"bubble_theory", r.theory},
                   {"bubble_measured", r.measured},
                   {"step_ms", r.step_ms},
                   {"peak_in_flight", r.peak_in_flight}});
  }
  return {{"work", options.work}, {"rows", out}};
}

}  // namespace cohort::pipeline
