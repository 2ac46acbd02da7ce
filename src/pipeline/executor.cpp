#include "cohort/pipeline/executor.hpp"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
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

// This stage's plan in the mode its backend needs, once every stage's has been checked under the
// backend's rules: the plan checked is the plan run, for this very schedule, p and M.
TransferPlan checked_plan(const ExecutorOptions& o, const comm::Communicator* pipe) {
  const bool nccl = pipe != nullptr && pipe->backend() == comm::Backend::kNccl;
  const PlanMode mode = nccl ? PlanMode::kPaired : PlanMode::kAhead;
  auto plans = plan_pipeline(o.schedule, o.stages, o.micro_batches, mode);
  const auto stall = find_stall(plans, nccl ? Semantics::kInOrderStream : Semantics::kIndependent);
  COHORT_CHECK(!stall, Error, "pipeline executor: ", to_string(o.schedule), " over ", o.stages,
               " stages and ", o.micro_batches, " micro-batches with ", to_string(mode),
               " transfers would not complete: ", *stall);
  return std::move(plans[static_cast<std::size_t>(o.stage)]);
}

}  // namespace

Executor::Executor(comm::Communicator* pipe, ExecutorOptions options)
    : pipe_(pipe), options_(std::move(options)) {
  COHORT_CHECK(options_.stages == 1 || (pipe_ != nullptr && pipe_->size() == options_.stages &&
                                        pipe_->rank() == options_.stage),
               Error, "pipeline executor: the pipeline group does not match the stages");
  plan_ = checked_plan(options_, pipe_);
  if (options_.stages > 1 && pipe_->backend() == comm::Backend::kNccl) connect_neighbours();
}

// NCCL makes a point-to-point connection the first time two ranks use it, inside ncclGroupEnd,
// where the host waits until the peer posts its own first transfer of that pair and launches
// nothing of the group before (NVIDIA/nccl#415). A plan's group whose first use of a pair meets
// the peer's later group would then stall on the host, which the plan's rules (find_stall) do not
// model: GPipe's {send a(M-1), recv g0} meets the next stage only after its last forward. So
// every stage connects to both neighbours at once, here, with one small group in both
// directions, and the plans run over connections that exist. Every stage builds its executor
// at start-up, so every stage is here together.
void Executor::connect_neighbours() {
  const auto one = at::TensorOptions().dtype(at::kFloat).device(options_.device);
  std::vector<at::Tensor> held;
  std::vector<comm::Communicator::Transfer> transfers;
  for (const int peer : {options_.stage - 1, options_.stage + 1}) {
    if (peer < 0 || peer >= options_.stages) continue;
    held.push_back(at::zeros({1}, one));
    held.push_back(at::empty({1}, one));
    transfers.push_back({true, held[held.size() - 2], peer, 0});
    transfers.push_back({false, held.back(), peer, 0});
  }
  for (auto& work : pipe_->p2p_group_async(transfers)) work->wait();
}

at::Tensor Executor::receive_buffer(const std::vector<std::int64_t>& shape,
                                    std::int64_t batch) const {
  std::vector<std::int64_t> sizes{batch};
  sizes.insert(sizes.end(), shape.begin(), shape.end());
  return at::empty(sizes, at::TensorOptions().dtype(at::kFloat).device(options_.device));
}

// One step's run of the plan: what is in flight, pending and measured. The executor's protocol
// (executor.hpp) in code: the plan's groups, waits, forwards, backwards.
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
    const TransferPlan& plan = e_.plan_;
    std::size_t next_group = 0;
    for (std::size_t k = 0; k <= plan.actions.size(); ++k) {
      // Finished sends let go of their tensors: a sent activation must not outlive its backward.
      sends_.erase(
          std::remove_if(sends_.begin(), sends_.end(), [](const auto& w) { return w->test(); }),
          sends_.end());
      for (; next_group < plan.groups.size() && plan.groups[next_group].before == k; ++next_group) {
        start(plan.groups[next_group]);
      }
      if (k == plan.actions.size()) break;
      if (plan.actions[k].kind == Action::Kind::kForward) {
        forward(k);
      } else {
        backward(k);
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
  // One group of the plan as one p2p_group_async: receives into fresh buffers, sends of outputs
  // their actions have left in outgoing_.
  void start(const TransferGroup& group) {
    std::vector<comm::Communicator::Transfer> transfers;
    for (const auto& t : group.transfers) {
      transfers.push_back(
          {t.send, t.send ? take_output(t.action) : buffer_for(t), t.peer, transfer_tag(t)});
    }
    auto works = e_.pipe_->p2p_group_async(transfers);
    for (std::size_t j = 0; j < works.size(); ++j) {
      if (group.transfers[j].send) {
        sends_.push_back(std::move(works[j]));
      } else {
        recvs_.emplace(group.transfers[j].action,
                       PendingRecv{transfers[j].tensor, std::move(works[j])});
      }
    }
  }

  at::Tensor buffer_for(const PlannedTransfer& t) const {
    const bool activation = t.kind == PlannedTransfer::Kind::kActivation;
    return e_.receive_buffer(activation ? o_.input_shape : o_.output_shape,
                             inputs_[t.micro].size(0));
  }

  at::Tensor take_output(std::size_t i) {
    auto node = outgoing_.extract(i);
    COHORT_CHECK(!node.empty(), Error, "pipeline plan: a send before action ", i, " computed");
    return std::move(node.mapped());
  }

  at::Tensor take(std::size_t i) {
    auto node = recvs_.extract(i);
    COHORT_CHECK(!node.empty(), Error, "pipeline plan: no receive started for action ", i);
    const auto start = Clock::now();
    node.mapped().work->wait();
    stats_.wait_s += since(start);
    return node.mapped().buffer;
  }

  void forward(std::size_t i) {
    const int m = e_.plan_.actions[i].micro;
    InFlight f;
    f.input = first_ ? inputs_[m] : take(i).requires_grad_(true);
    const auto start = Clock::now();
    at::Tensor out = hooks_.forward(m, f.input);
    if (last_) {
      f.output = hooks_.loss(m, out);
      stats_.loss += f.output.item<double>();
    } else {
      f.output = out;
      outgoing_.emplace(i, out.detach().to(at::kFloat).contiguous());
    }
    stats_.compute_s += since(start);
    live_bytes_ += held_bytes(f);
    live_.emplace(m, std::move(f));
    stats_.peak_in_flight = std::max(stats_.peak_in_flight, static_cast<int>(live_.size()));
    stats_.peak_activation_bytes = std::max(stats_.peak_activation_bytes, live_bytes_);
  }

  void backward(std::size_t i) {
    const int m = e_.plan_.actions[i].micro;
    auto node = live_.extract(m);
    COHORT_CHECK(!node.empty(), Error, "pipeline schedule: backward before forward of micro-batch ",
                 m);
    InFlight& f = node.mapped();
    const at::Tensor grad = last_ ? at::Tensor() : take(i);
    const auto start = Clock::now();
    if (hooks_.before_backward) hooks_.before_backward(m, i + 1 == e_.plan_.actions.size());
    if (last_) {
      f.output.backward();
    } else {
      torch::autograd::backward({f.output}, {grad.to(f.output.scalar_type())});
    }
    if (!first_) {
      outgoing_.emplace(i, f.input.grad().contiguous());
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
  std::map<std::size_t, PendingRecv> recvs_;    // by action index
  std::map<std::size_t, at::Tensor> outgoing_;  // computed, to send: by action index
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
