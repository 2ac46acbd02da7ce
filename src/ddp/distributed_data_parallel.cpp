#include "cohort/ddp/distributed_data_parallel.hpp"

#include <ATen/ops/mul.h>
#include <ATen/ops/scalar_tensor.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <chrono>

#include "cohort/error.hpp"

namespace cohort::ddp {

struct DistributedDataParallel::State {
  comm::Communicator* comm = nullptr;
  DdpOptions options;
  std::vector<std::string> names;   // registration order
  std::vector<at::Tensor> params;   // registration order
  std::vector<at::Tensor> buffers;  // module buffers (BatchNorm statistics...)
  std::vector<BucketSpec> plan;
  std::vector<at::Tensor> flat;  // one per bucket
  std::vector<at::Tensor> wire;  // compressed copies, when compressing
  std::vector<int> bucket_of;    // param index -> bucket, -1 when frozen
  std::vector<std::int64_t> offset_of;
  std::vector<int> pending;
  std::vector<bool> ready;
  std::vector<comm::WorkPtr> works;
  std::size_t next_launch = 0;
  bool sync = true;
  bool active = true;
  DdpStepStats stats;
  // Keeps gradient accumulators alive (a variable holds them weakly) and the hooks removable.
  std::vector<std::pair<std::shared_ptr<torch::autograd::Node>, std::uintptr_t>> hooks;

  std::vector<at::Tensor> slots;  // per parameter: its gradient's place in the bucket
  at::Tensor scale;               // 1 / world size, as a 0-dim tensor
  bool lone = false;            // a communicator of one rank: plain gradients, no buckets, no hooks
  bool slots_consumed = false;  // a finish_step happened since the last backward

  // The gradient slot of parameter p: a tensor over the bucket's storage. Not an autograd view
  // (which narrow().view() would be), because LibTorch's Optimizer::zero_grad() calls detach_()
  // on gradients, and that refuses views; zero_() then clears the bucket in place. The slot has
  // the parameter's strides when those are dense (a channels-last weight, say), as autograd
  // lays the gradient out like the parameter: absorbing it is then a straight copy.
  at::Tensor make_slot(std::size_t p) const {
    const at::Tensor& param = params[p];
    const at::Tensor& bucket = flat[static_cast<std::size_t>(bucket_of[p])];
    at::Tensor slot = at::empty({0}, bucket.options());
    const c10::DimVector strides = param.is_non_overlapping_and_dense()
                                       ? c10::DimVector(param.strides())
                                       : c10::contiguous_strides(param.sizes());
    slot.set_(bucket.storage(), bucket.storage_offset() + offset_of[p], param.sizes(), strides);
    return slot;
  }
  void absorb(std::size_t p);
  // Every bucket waits for all of its parameters again; nothing launched yet.
  void arm() {
    for (std::size_t b = 0; b < plan.size(); ++b)
      pending[b] = static_cast<int>(plan[b].params.size());
    std::fill(ready.begin(), ready.end(), false);
    next_launch = 0;
  }
  void mark_ready(std::size_t p);
  void launch_ready();      // from hooks: only when overlapping
  void launch_all_ready();  // in bucket order, as far as buckets are complete
};

namespace {

at::ScalarType wire_type(Compression c) {
  return c == Compression::kBf16 ? at::kBFloat16 : at::kHalf;
}

}  // namespace

// Moves parameter p's gradient into its slot, pre-divided by the world size, so that the bucket
// is summed rather than averaged. A gradient that autograd stole into a fresh tensor (grads are
// released at begin_step) is written once, scaled on the way (no extra pass over the bucket); one
// accumulated in place in the slot is scaled in place; none at all (unused) is zero.
void DistributedDataParallel::State::absorb(std::size_t p) {
  const at::Tensor grad = params[p].grad();
  const at::Tensor& slot = slots[p];
  if (grad.defined() && grad.data_ptr() == slot.data_ptr()) {
    slot.mul_(scale);
    return;
  }
  if (grad.defined()) {
    at::mul_out(const_cast<at::Tensor&>(slot), grad, scale);
  } else {
    slot.zero_();
  }
  params[p].mutable_grad() = slot;
}

void DistributedDataParallel::State::mark_ready(std::size_t p) {
  if (!active || !sync || bucket_of[p] < 0 || ready[p]) return;
  absorb(p);
  ready[p] = true;
  --pending[static_cast<std::size_t>(bucket_of[p])];
  launch_ready();
}

void DistributedDataParallel::State::launch_ready() {
  if (!options.overlap) return;
  launch_all_ready();
}

void DistributedDataParallel::State::launch_all_ready() {
  while (next_launch < plan.size() && pending[next_launch] == 0) {
    at::Tensor& buffer =
        options.compression == Compression::kNone ? flat[next_launch] : wire[next_launch];
    // Gradients were pre-divided by absorb(): the buckets are summed.
    if (options.compression != Compression::kNone) buffer.copy_(flat[next_launch]);
    works[next_launch] = comm->all_reduce_async(buffer);
    ++next_launch;
  }
}

DistributedDataParallel::DistributedDataParallel(torch::nn::Module& module,
                                                 comm::Communicator& comm, DdpOptions options)
    : state_(std::make_shared<State>()) {
  State& s = *state_;
  s.comm = &comm;
  s.options = options;
  std::vector<ParamInfo> info;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    s.names.push_back(item.key());
    s.params.push_back(item.value());
    info.push_back(
        {item.value().numel(), item.value().scalar_type(), item.value().requires_grad()});
    COHORT_CHECK(item.value().is_non_overlapping_and_dense(), ConfigError, "DDP: parameter '",
                 item.key(), "' is not dense (a view or an overlapping layout)");
  }
  for (const auto& buffer : module.buffers(/*recurse=*/true)) s.buffers.push_back(buffer);
  if (comm.size() == 1) {
    s.lone = true;  // nothing to agree with: copying gradients into buckets would be pure cost
    return;
  }
  {
    at::NoGradGuard no_grad;  // parameters are leaves that require grad: copy into them silently
    for (auto& p : s.params) {
      if (p.is_contiguous()) {
        comm.broadcast(p, 0);
      } else {  // a dense layout such as channels-last: collectives take contiguous tensors
        at::Tensor copy = p.contiguous();
        comm.broadcast(copy, 0);
        p.copy_(copy);
      }
    }
    for (auto& b : s.buffers) comm.broadcast(b, 0);
  }
  s.plan = plan_buckets(info, options.bucket_bytes, options.first_bucket_bytes);
  s.bucket_of.assign(s.params.size(), -1);
  s.offset_of.assign(s.params.size(), 0);
  for (std::size_t b = 0; b < s.plan.size(); ++b) {
    const BucketSpec& spec = s.plan[b];
    s.flat.push_back(at::zeros({spec.numel}, s.params[spec.params.front()].options()));
    if (options.compression != Compression::kNone) {
      COHORT_CHECK(spec.dtype == at::kFloat, ConfigError,
                   "DDP: compression needs float32 gradients, bucket ", b, " is ", spec.dtype);
      s.wire.push_back(
          at::empty({spec.numel}, s.flat.back().options().dtype(wire_type(options.compression))));
    }
    for (std::size_t i = 0; i < spec.params.size(); ++i) {
      s.bucket_of[spec.params[i]] = static_cast<int>(b);
      s.offset_of[spec.params[i]] = spec.offsets[i];
    }
  }
  s.scale = at::scalar_tensor(1.0 / comm.size(), at::TensorOptions().dtype(at::kDouble));
  s.slots.resize(s.params.size());
  for (std::size_t p = 0; p < s.params.size(); ++p) {
    if (s.bucket_of[p] >= 0) s.slots[p] = s.make_slot(p);
  }
  s.works.resize(s.plan.size());
  s.pending.assign(s.plan.size(), 0);
  s.ready.assign(s.params.size(), false);
  for (std::size_t p = 0; p < s.params.size(); ++p) {
    if (s.bucket_of[p] < 0) continue;
    s.params[p].mutable_grad() = s.slots[p];
    auto accumulator = torch::autograd::impl::grad_accumulator(s.params[p]);
    std::weak_ptr<State> weak = state_;
    const auto key =
        accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
            [weak, p](const torch::autograd::variable_list& outputs,
                      const torch::autograd::variable_list&) {
              if (const auto state = weak.lock()) state->mark_ready(p);
              return outputs;
            }));
    s.hooks.emplace_back(std::move(accumulator), key);
  }
  begin_step();
}

DistributedDataParallel::~DistributedDataParallel() {
  state_->active = false;
  for (auto& [accumulator, key] : state_->hooks) accumulator->del_post_hook(key);
  for (auto& work : state_->works) {
    if (work) work->wait();  // never leave an operation writing into freed buffers
  }
}

void DistributedDataParallel::begin_step() {
  State& s = *state_;
  if (s.lone) {
    if (s.slots_consumed) {
      for (auto& p : s.params) p.mutable_grad() = at::Tensor();
      s.slots_consumed = false;
    }
    return;
  }
  if (s.options.broadcast_buffers) {
    at::NoGradGuard no_grad;
    for (auto& b : s.buffers) s.comm->broadcast(b, 0);
  }
  // After a finished step, release the gradients: autograd then hands each new gradient over
  // without accumulating it into a zeroed slot, and absorb() writes it into the slot once. Between
  // no_sync micro-steps gradients are kept, so that they accumulate.
  if (s.slots_consumed) {
    for (std::size_t p = 0; p < s.params.size(); ++p) {
      if (s.bucket_of[p] >= 0 && s.params[p].grad().defined() &&
          s.params[p].grad().data_ptr() == s.slots[p].data_ptr()) {
        s.params[p].mutable_grad() = at::Tensor();
      }
    }
    s.slots_consumed = false;
  }
  if (!s.sync) return;  // accumulating: the readiness of the synced step is armed later
  s.arm();
}

void DistributedDataParallel::finish_step() {
  State& s = *state_;
  if (!s.sync) return;
  s.stats = DdpStepStats{};
  if (s.lone) {
    s.slots_consumed = true;
    return;
  }
  s.stats.buckets_launched_in_backward = static_cast<int>(s.next_launch);
  if (std::any_of(s.pending.begin(), s.pending.end(), [](int n) { return n > 0; })) {
    std::vector<std::string> missing;
    for (std::size_t p = 0; p < s.params.size(); ++p) {
      if (s.bucket_of[p] >= 0 && !s.ready[p]) missing.push_back(s.names[p]);
    }
    if (!s.options.find_unused_parameters) {
      for (auto& work : s.works)
        if (work) work->wait();
      std::string list;
      for (const auto& name : missing) list += (list.empty() ? "'" : ", '") + name + "'";
      COHORT_THROW(ConfigError, "DDP: parameter ", list,
                   " received no gradient in this step; set "
                   "find_unused_parameters if the model leaves parameters unused on purpose");
    }
    for (std::size_t p = 0; p < s.params.size(); ++p) {
      if (s.bucket_of[p] >= 0 && !s.ready[p]) {
        s.absorb(p);  // zeros, or what earlier no_sync steps accumulated
        s.ready[p] = true;
        --s.pending[static_cast<std::size_t>(s.bucket_of[p])];
      }
    }
  }
  s.launch_all_ready();
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t b = 0; b < s.plan.size(); ++b) {
    s.works[b]->wait();
    s.works[b].reset();
    const at::Tensor& sent = s.options.compression == Compression::kNone ? s.flat[b] : s.wire[b];
    s.stats.bytes_reduced += sent.numel() * static_cast<std::int64_t>(sent.element_size());
    if (s.options.compression != Compression::kNone) s.flat[b].copy_(s.wire[b]);
  }
  s.stats.finish_wait_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  // Arm the next step, so that a caller that skips begin_step() still gets correct hooks.
  s.arm();
  s.slots_consumed = true;
}

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& ddp)
    : ddp_(ddp), previous_(ddp.state_->sync) {
  ddp_.state_->sync = false;
}

DistributedDataParallel::NoSync::~NoSync() { ddp_.state_->sync = previous_; }

const std::vector<BucketSpec>& DistributedDataParallel::buckets() const { return state_->plan; }
const DdpStepStats& DistributedDataParallel::last_step() const { return state_->stats; }

void zero_grad_in_place(const std::vector<at::Tensor>& params) {
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    at::Tensor grad = p.grad();
    grad.detach_();  // as LibTorch's zero_grad: no autograd history kept on a gradient
    grad.zero_();
  }
}

}  // namespace cohort::ddp
