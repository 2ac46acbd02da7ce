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

// One step's run of the actions: what is in flight, pending and measured. The executor's
// protocol (executor.hpp) in code: posts, waits, forwards, backwards.
class Executor::StepRun {
 public:
  StepRun(const Executor& e, const std::vector<at::Tensor>& inputs, const StepHooks& hooks)
      : e_(e),
        o_(e.options_),
        inputs_(inputs),
        hooks_(hooks),
        first_(o_.stage == 0),
        last_(o_.stage + 1 == o_.stages),
        memory_base_(o_.memory_in_use ? o_.memory_in_use() : 0) {}

  StepStats run() {
    const auto step_start = Clock::now();
    const auto& actions = e_.actions_;
    for (std::size_t i = 0; i < actions.size(); ++i) {
      // Finished sends let go of their tensors: a sent activation must not outlive its backward.
      sends_.erase(
          std::remove_if(sends_.begin(), sends_.end(), [](const auto& w) { return w->test(); }),
          sends_.end());
      post(i);
      post(i + 1);
      if (actions[i].kind == Action::Kind::kForward) {
        forward(i);
      } else {
        backward(i);
      }
      sample_memory();
    }
    const auto start = Clock::now();
    for (auto& work : sends_) work->wait();
    stats_.wait_s += since(start);
    stats_.step_s = since(step_start);
    return stats_;
  }

 private:
  // A receive for action i, if it needs one: posted once, ahead of time.
  void post(std::size_t i) {
    if (i >= e_.actions_.size() || recvs_.count(i) != 0) return;
    const Action& a = e_.actions_[i];
    const bool forward = a.kind == Action::Kind::kForward;
    if (forward ? first_ : last_) return;
    const std::int64_t batch = inputs_[a.micro].size(0);
    PendingRecv r{e_.receive_buffer(forward ? o_.input_shape : o_.output_shape, batch), nullptr};
    r.work = e_.pipe_->recv_async(r.buffer, o_.stage + (forward ? -1 : 1),
                                  forward ? activation_tag(a.micro) : gradient_tag(a.micro));
    recvs_.emplace(i, std::move(r));
  }

  at::Tensor take(std::size_t i) {
    auto node = recvs_.extract(i);
    const auto start = Clock::now();
    node.mapped().work->wait();
    stats_.wait_s += since(start);
    return node.mapped().buffer;
  }

  void forward(std::size_t i) {
    const int m = e_.actions_[i].micro;
    InFlight f;
    f.input = first_ ? inputs_[m] : take(i).requires_grad_(true);
    const auto start = Clock::now();
    at::Tensor out = hooks_.forward(m, f.input);
    if (last_) {
      f.output = hooks_.loss(m, out);
      stats_.loss += f.output.item<double>();
    } else {
      f.output = out;
      at::Tensor wire = out.detach().to(at::kFloat).contiguous();
      sends_.push_back(e_.pipe_->send_async(wire, o_.stage + 1, activation_tag(m)));
    }
    stats_.compute_s += since(start);
    live_bytes_ += held_bytes(f);
    live_.emplace(m, std::move(f));
    stats_.peak_in_flight = std::max(stats_.peak_in_flight, static_cast<int>(live_.size()));
    stats_.peak_activation_bytes = std::max(stats_.peak_activation_bytes, live_bytes_);
  }

  void backward(std::size_t i) {
    const int m = e_.actions_[i].micro;
    auto node = live_.extract(m);
    COHORT_CHECK(!node.empty(), Error, "pipeline schedule: backward before forward of micro-batch ",
                 m);
    InFlight& f = node.mapped();
    const at::Tensor grad = last_ ? at::Tensor() : take(i);
    const auto start = Clock::now();
    if (hooks_.before_backward) hooks_.before_backward(m, i + 1 == e_.actions_.size());
    if (last_) {
      f.output.backward();
    } else {
      torch::autograd::backward({f.output}, {grad.to(f.output.scalar_type())});
    }
    if (!first_) {
      const at::Tensor back = f.input.grad().contiguous();
      sends_.push_back(e_.pipe_->send_async(back, o_.stage - 1, gradient_tag(m)));
    }
    stats_.compute_s += since(start);
    live_bytes_ -= held_bytes(f);
  }

  // What a micro-batch in flight holds at the stage's borders (received input, sent output).
  std::int64_t held_bytes(const InFlight& f) const {
    return (first_ ? 0 : bytes_of(f.input)) + (last_ ? 0 : bytes_of(f.output));
  }

  void sample_memory() {
    if (!o_.memory_in_use) return;
    stats_.peak_memory_growth =
        std::max(stats_.peak_memory_growth, o_.memory_in_use() - memory_base_);
  }

  const Executor& e_;
  const ExecutorOptions& o_;
  const std::vector<at::Tensor>& inputs_;
  const StepHooks& hooks_;
  const bool first_, last_;
  const std::int64_t memory_base_;
  StepStats stats_;
  std::map<int, InFlight> live_;
  std::map<std::size_t, PendingRecv> recvs_;  // by action index
  std::vector<comm::WorkPtr> sends_;
  std::int64_t live_bytes_ = 0;
};

StepStats Executor::train_step(const std::vector<at::Tensor>& inputs, const StepHooks& hooks) {
  COHORT_CHECK(static_cast<int>(inputs.size()) == options_.micro_batches, Error,
               "pipeline executor: ", inputs.size(), " micro-batches for ", options_.micro_batches);
  return StepRun(*this, inputs, hooks).run();
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
