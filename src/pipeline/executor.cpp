#include "cohort/pipeline/executor.hpp"

#include <ATen/ops/empty.h>
#include <c10/core/GradMode.h>
#include <torch/autograd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "cohort/error.hpp"

namespace cohort::pipeline {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int activation_tag(int micro) { return 2 * micro; }
int gradient_tag(int micro) { return 2 * micro + 1; }

std::int64_t bytes_of(const at::Tensor& t) {
  return t.defined() ? t.numel() * static_cast<std::int64_t>(t.element_size()) : 0;
}

// One micro-batch between its forward and its backward.
struct InFlight {
  at::Tensor input;   // received (requires grad) or the data
  at::Tensor output;  // the stage's output, or the loss on the last stage
};

struct PendingRecv {
  at::Tensor buffer;
  comm::WorkPtr work;
};

}  // namespace

Executor::Executor(comm::Communicator* pipe, ExecutorOptions options)
    : pipe_(pipe), options_(std::move(options)) {
  COHORT_CHECK(options_.stages == 1 || (pipe_ != nullptr && pipe_->size() == options_.stages &&
                                        pipe_->rank() == options_.stage),
               Error, "pipeline executor: the pipeline group does not match the stages");
  actions_ =
      schedule_actions(options_.schedule, options_.stages, options_.stage, options_.micro_batches);
}

at::Tensor Executor::receive_buffer(const std::vector<std::int64_t>& shape,
                                    std::int64_t batch) const {
  std::vector<std::int64_t> sizes{batch};
  sizes.insert(sizes.end(), shape.begin(), shape.end());
  return at::empty(sizes, at::TensorOptions().dtype(at::kFloat).device(options_.device));
}

StepStats Executor::train_step(const std::vector<at::Tensor>& inputs, const StepHooks& hooks) {
  const auto step_start = Clock::now();
  COHORT_CHECK(static_cast<int>(inputs.size()) == options_.micro_batches, Error,
               "pipeline executor: ", inputs.size(), " micro-batches for ", options_.micro_batches);
  const bool first = options_.stage == 0, last = options_.stage + 1 == options_.stages;
  StepStats stats;
  std::map<int, InFlight> live;
  std::map<std::size_t, PendingRecv> recvs;  // by action index
  std::vector<comm::WorkPtr> sends;
  std::int64_t live_bytes = 0;
  const std::int64_t memory_base = options_.memory_in_use ? options_.memory_in_use() : 0;
  const auto sample_memory = [&] {
    if (!options_.memory_in_use) return;
    stats.peak_memory_growth =
        std::max(stats.peak_memory_growth, options_.memory_in_use() - memory_base);
  };
  // A receive for action i, if it needs one: posted once, ahead of time.
  const auto post = [&](std::size_t i) {
    if (i >= actions_.size() || recvs.count(i) != 0) return;
    const Action& a = actions_[i];
    const bool forward = a.kind == Action::Kind::kForward;
    if (forward ? first : last) return;
    const std::int64_t batch = inputs[a.micro].size(0);
    PendingRecv r{receive_buffer(forward ? options_.input_shape : options_.output_shape, batch),
                  nullptr};
    const int peer = options_.stage + (forward ? -1 : 1);
    r.work = pipe_->recv_async(r.buffer, peer,
                               forward ? activation_tag(a.micro) : gradient_tag(a.micro));
    recvs.emplace(i, std::move(r));
  };
  const auto take = [&](std::size_t i) {
    auto node = recvs.extract(i);
    const auto start = Clock::now();
    node.mapped().work->wait();
    stats.wait_s += since(start);
    return node.mapped().buffer;
  };
  for (std::size_t i = 0; i < actions_.size(); ++i) {
    // Finished sends let go of their tensors: a sent activation must not outlive its backward.
    sends.erase(std::remove_if(sends.begin(), sends.end(), [](const auto& w) { return w->test(); }),
                sends.end());
    post(i);
    post(i + 1);
    const Action& a = actions_[i];
    if (a.kind == Action::Kind::kForward) {
      InFlight f;
      f.input = first ? inputs[a.micro] : take(i).requires_grad_(true);
      const auto start = Clock::now();
      at::Tensor out = hooks.forward(a.micro, f.input);
      if (last) {
        f.output = hooks.loss(a.micro, out);
        stats.loss += f.output.item<double>();
      } else {
        f.output = out;
        at::Tensor wire = out.detach().to(at::kFloat).contiguous();
        sends.push_back(pipe_->send_async(wire, options_.stage + 1, activation_tag(a.micro)));
      }
      stats.compute_s += since(start);
      live_bytes += (first ? 0 : bytes_of(f.input)) + (last ? 0 : bytes_of(f.output));
      live.emplace(a.micro, std::move(f));
      sample_memory();
      stats.peak_in_flight = std::max(stats.peak_in_flight, static_cast<int>(live.size()));
      stats.peak_activation_bytes = std::max(stats.peak_activation_bytes, live_bytes);
      continue;
    }
    auto node = live.extract(a.micro);
    COHORT_CHECK(!node.empty(), Error, "pipeline schedule: backward before forward of micro-batch ",
                 a.micro);
    InFlight& f = node.mapped();
    at::Tensor grad = last ? at::Tensor() : take(i);
    const auto start = Clock::now();
    if (hooks.before_backward) hooks.before_backward(a.micro, i + 1 == actions_.size());
    if (last) {
      f.output.backward();
    } else {
      torch::autograd::backward({f.output}, {grad.to(f.output.scalar_type())});
    }
    if (!first) {
      at::Tensor back = f.input.grad().contiguous();
      sends.push_back(pipe_->send_async(back, options_.stage - 1, gradient_tag(a.micro)));
    }
    stats.compute_s += since(start);
    live_bytes -= (first ? 0 : bytes_of(f.input)) + (last ? 0 : bytes_of(f.output));
    sample_memory();
  }
  const auto start = Clock::now();
  for (auto& work : sends) work->wait();
  stats.wait_s += since(start);
  stats.step_s = since(step_start);
  return stats;
}

at::Tensor Executor::forward_only(const at::Tensor& input,
                                  const std::function<at::Tensor(const at::Tensor&)>& forward) {
  const bool first = options_.stage == 0, last = options_.stage + 1 == options_.stages;
  at::NoGradGuard no_grad;
  at::Tensor x = input;
  if (!first) {
    x = receive_buffer(options_.input_shape, input.size(0));
    pipe_->recv(x, options_.stage - 1, activation_tag(0));
  }
  at::Tensor out = forward(x);
  if (last) return out;
  at::Tensor wire = out.to(at::kFloat).contiguous();
  pipe_->send(wire, options_.stage + 1, activation_tag(0));
  return {};
}

}  // namespace cohort::pipeline
