// One optimizer step of Trainer::Impl: micro-batches through forward and backward (DDP's
// accumulation, or the pipeline's schedule), the gradient norm and clipping, the update, and the
// step's loss agreed by every rank.
#include <ATen/ops/_foreach_norm.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>

#include "cohort/ddp/distributed_data_parallel.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/error.hpp"
#include "cohort/io/dtype.hpp"
#include "models/task.hpp"
#include "train/step.hpp"
#include "train/trainer_impl.hpp"

namespace cohort::train {
namespace {

// The model's output as the loss needs it, checked at every step (a flag and a type test): floating
// point, and carrying a gradient. A model that returns integers or a detached tensor would
// otherwise fail inside backward with LibTorch's message and a backtrace.
at::Tensor trainable(const at::Tensor& output) {
  COHORT_CHECK(at::isFloatingType(output.scalar_type()) && output.requires_grad(), ConfigError,
               "the model returned ", io::shape_text(output.sizes().vec()), " ",
               c10::toString(output.scalar_type()),
               output.requires_grad() ? "" : " without a gradient",
               ": the loss needs floating-point outputs computed from trained parameters");
  return output.to(at::kFloat);
}

}  // namespace

// The global L2 norm of the (averaged) gradients: clip_grad_norm's when clipping (every step),
// else, for the monitor, every monitor.grad_norm_every steps: it reads every gradient once, which
// costs about as much as a pass of the optimizer (5% of a step of the benchmark MLP on a 2-core
// VM). NaN: not measured at this step.
double Trainer::Impl::grad_norm(std::int64_t index) {
  const double clip = settings.clip_norm;
  const std::int64_t grad_norm_every = settings.grad_norm_every;
  const auto& layout = parallel->layout();
  // Every stage, tensor part and ZeRO shard holds a share.
  if (layout.stages() > 1 || layout.tensor() > 1 || parallel->sharded()) {
    if (clip <= 0 &&
        (!monitor->enabled() || grad_norm_every <= 0 || (index + 1) % grad_norm_every != 0)) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    std::vector<at::Tensor> optimized;
    for (const auto& named : parallel->optimized()) optimized.push_back(named.second);
    return clip_grad_norm(optimized, clip,
                          [this](double) { return parallel->grad_norm_squared(*comms.control); });
  }
  if (clip > 0) return clip_grad_norm(parallel->trained().parameters(), clip);
  if (!monitor->enabled() || grad_norm_every <= 0 || (index + 1) % grad_norm_every != 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  std::vector<at::Tensor> grads;
  for (const auto& p : parallel->trained().parameters()) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return 0;
  const auto start = std::chrono::steady_clock::now();
  // One call for all the per-tensor norms (a loop of norm() calls costs more in dispatch).
  const double norm = at::stack(at::_foreach_norm(grads, 2)).norm().item<double>();
  optimization.grad_norm_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return norm;
}

// The bytes one micro-batch's forward left held for its backward (activations, the loss's
// inputs), measured once per run as the growth of the host heap (pipelined: the stage's most
// growth in the first step): metrics.jsonl's "memory" record.
// With it, each rank's peak resident memory so far (start-up and that forward), and at the end of
// start-up (the model built and the rank's part kept): gathers, every rank at the same step.
void Trainer::Impl::report_activations(std::int64_t bytes, std::int64_t index) {
  activations_reported = true;
  const auto peaks = peak_rss_of_ranks();
  const auto startup = peak_rss_of_ranks(startup_peak_rss);
  log({{"event", "memory"},
       {"step", index + 1},
       {"activation_bytes", std::max<std::int64_t>(0, bytes)},  // 0: the heap shrank
       {"recompute", config.model.recompute},
       {"micro_batch", plan.batch_size},
       {"peak_rss_bytes", peaks},
       {"startup_peak_rss_bytes", startup}});
}

// Every rank's peak resident memory so far, in rank order, on rank 0 (who logs it; the other
// ranks get none). Collective over the control group: a gather, O(R) bytes in all.
std::vector<std::int64_t> Trainer::Impl::peak_rss_of_ranks(std::int64_t value) {
  at::Tensor mine = at::tensor({value >= 0 ? value : env::peak_rss_bytes()}, at::kLong);
  at::Tensor all;
  if (comms.control->rank() == 0) all = at::zeros({comms.control->size()}, at::kLong);
  comms.control->gather(all, mine, 0);
  if (comms.control->rank() != 0) return {};
  return {all.data_ptr<std::int64_t>(), all.data_ptr<std::int64_t>() + all.numel()};
}

// Each phase ends with a lap of the step timer.
double Trainer::Impl::step(const std::vector<data::Batch>& micro, std::int64_t index) {
  using monitor::Phase;
  auto& ddp = parallel->ddp();
  double local = 0;
  if (parallel->pipelined()) local = pipeline_step(micro.front(), index);
  for (std::size_t i = 0; i < micro.size() && !parallel->pipelined(); ++i) {
    std::optional<ddp::DistributedDataParallel::NoSync> local_only;
    if (i + 1 < micro.size()) local_only.emplace(ddp);  // sum locally, reduce once at the end
    ddp.begin_step();
    timer.lap(Phase::kComm);  // buffer broadcast, when there are buffers
    // Once per run, on the host: what the first forward leaves held for backward.
    // (A flag, not the figure: a heap that shrank during the forward gives a negative one, and
    // every rank must take part in the report's collective exactly once.)
    const bool measure = !activations_reported && i == 0 && !settings.cuda;
    const std::int64_t heap_before = measure ? env::heap_bytes_in_use() : 0;
    at::Tensor logits;
    {
      AutocastScope autocast(settings.bf16, settings.cuda);
      logits = parallel->forward(micro[i]);
    }
    if (settings.slow_ms > 0 && i == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(settings.slow_ms));
    }
    at::Tensor loss =
        task->loss(trainable(logits), micro[i].targets) / static_cast<double>(micro.size());
    if (measure) report_activations(env::heap_bytes_in_use() - heap_before, index);
    timer.lap(Phase::kForward);
    loss.backward();
    timer.lap(Phase::kBackward);
    ddp.finish_step();
    local += loss.item<double>();
    timer.lap(Phase::kComm);  // exposed: what backward did not hide
  }
  return update(local, index);
}

// After the step's backward passes: the gradient norm, the scheduled learning rate, the update
// (ZeRO: every shard's to every rank), and the step's loss, the mean over the data-parallel
// ranks of what each computed (`local`). TrainingError when it is not finite, on every rank.
double Trainer::Impl::update(double local, std::int64_t index) {
  using monitor::Phase;
  optimization.last_grad_norm = grad_norm(index);
  set_learning_rate(*optimization.optimizer, optimization.schedule->at(index),
                    optimization.lr_scales);
  timer.lap(Phase::kOptimizer);
  checkpoints->before_update();  // an asynchronous save may still be copying the parameters
  timer.lap(Phase::kCheckpoint);
  optimization.optimizer->step();
  timer.lap(Phase::kOptimizer);
  parallel->ddp().gather_parameters();  // ZeRO: every shard's update to every rank
  timer.lap(Phase::kComm);
  // Only the ranks that compute the loss count it (pipeline: the last stage; tensor: index 0).
  at::Tensor mean = at::tensor({parallel->scores() ? local : 0.0}, at::kDouble);
  comms.control->all_reduce(mean);
  timer.lap(Phase::kComm);
  const double loss = mean.item<double>() / parallel->layout().data();
  if (!std::isfinite(loss)) monitor->diagnose(monitor::Diagnoser::non_finite_loss(index + 1, loss));
  COHORT_CHECK(std::isfinite(loss), TrainingError, "training diverged at step ", index + 1,
               ": the loss is ", loss, " (lower optim.lr, or set optim.clip_norm)");
  return loss;
}

// One pipelined step: the stage's share of every micro-batch's forward and backward, in the
// schedule's order. Compute is charged to backward, blocked transfers to communication.
double Trainer::Impl::pipeline_step(const data::Batch& batch, std::int64_t index) {
  const auto forward = [this](const at::Tensor& x) {
    AutocastScope autocast(settings.bf16, settings.cuda);
    at::Tensor out = parallel->forward(x);
    if (settings.slow_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(settings.slow_ms));
    }
    return out;
  };
  const auto stats = parallel->pipeline_step(
      batch, forward, [this](const at::Tensor& logits, const at::Tensor& targets) {
        return task->loss(trainable(logits), targets);
      });
  timer.split_lap(monitor::Phase::kComm, stats.wait_s, monitor::Phase::kBackward);
  // The memory record once, as a step without stages writes it: the stage's heap growth at its
  // most in this step (its micro-batches in flight), the ranks' peaks, at start-up and so far.
  if (!activations_reported && !settings.cuda) {
    report_activations(stats.peak_memory_growth, index);
  }
  return stats.loss;
}

}  // namespace cohort::train
