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
#include "ddp/ddp_state.hpp"

namespace cohort::ddp {

namespace {

at::ScalarType wire_type(Compression c) {
  return c == Compression::kBf16 ? at::kBFloat16 : at::kHalf;
}

}  // namespace

at::Tensor DistributedDataParallel::State::make_slot(std::size_t p,
                                                     const at::Tensor& bucket) const {
  const at::Tensor& param = params[p];
  at::Tensor slot = at::empty({0}, bucket.options());
  const c10::DimVector strides = param.is_non_overlapping_and_dense()
                                     ? c10::DimVector(param.strides())
                                     : c10::contiguous_strides(param.sizes());
  slot.set_(bucket.storage(), bucket.storage_offset() + offset_of[p], param.sizes(), strides);
  return slot;
}

void DistributedDataParallel::State::arm() {
  for (std::size_t b = 0; b < plan.size(); ++b) {
    pending[b] = static_cast<int>(plan[b].params.size());
  }
  std::fill(ready.begin(), ready.end(), false);
  std::fill(parts_seen.begin(), parts_seen.end(), 0);
  next_launch = 0;
}

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
  // ZeRO 2 keeps no whole gradient: the bucket is all there is until its reduce-scatter.
  params[p].mutable_grad() = options.zero >= 2 ? at::Tensor() : slot;
}

void DistributedDataParallel::State::mark_ready(std::size_t p) {
  if (!active || bucket_of[p] < 0 || ready[p]) return;
  if (!sync && options.zero < 2) return;  // accumulating locally (ZeRO 2 reduces every backward)
  // A gradient in parts: autograd adds them up in .grad; it is taken with the last one.
  if (++parts_seen[p] < parts_expected[p]) return;
  const auto b = static_cast<std::size_t>(bucket_of[p]);
  if (options.zero >= 2) take_bucket(b);
  absorb(p);
  ready[p] = true;
  // ZeRO 3: every gradient of the unit's bucket is in, so no backward step needs its parameters.
  if (--pending[b] == 0 && sharded_unit(b)) free_bucket(b);
  launch_ready();
}

void DistributedDataParallel::State::launch_ready() {
  if (!options.overlap && options.zero < 2) return;
  launch_all_ready();
}

void DistributedDataParallel::State::launch_all_ready() {
  while (next_launch < plan.size() && pending[next_launch] == 0) launch(next_launch++);
  // ZeRO 2: a backward's round is over once every bucket is sent; the next backward (another
  // micro-batch) starts a new one.
  if (options.zero >= 2 && next_launch == plan.size()) arm();
}

// Gradients were pre-divided by absorb(): the buckets are summed.
void DistributedDataParallel::State::launch(std::size_t b) {
  if (options.zero == 0) {
    at::Tensor& buffer = options.compression == Compression::kNone ? flat[b] : wire[b];
    if (options.compression != Compression::kNone) buffer.copy_(flat[b]);
    works[b] = comm->all_reduce_async(buffer);
    return;
  }
  at::Tensor part = own_part(flat[b], b);
  works[b] = comm->reduce_scatter_async(part, flat[b]);  // in place: this rank's part is the result
  if (options.zero < 2) return;
  in_flight.push_back(b);
  const std::size_t keep = options.overlap ? static_cast<std::size_t>(kZeroBucketsInFlight) : 0;
  while (in_flight.size() > keep) retire(in_flight.front());
}

DistributedDataParallel::DistributedDataParallel(torch::nn::Module& module,
                                                 comm::Communicator& comm, DdpOptions options)
    : state_(std::make_shared<State>()) {
  State& s = *state_;
  s.comm = &comm;
  s.options = options;
  COHORT_CHECK(options.zero >= 0 && options.zero <= 3, ConfigError, "DDP: ZeRO stage ",
               options.zero, " is not 0, 1, 2 or 3");
  COHORT_CHECK(options.zero == 0 || options.compression == Compression::kNone, ConfigError,
               "DDP: gradient compression does not combine with ZeRO");
  std::vector<ParamInfo> info;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    s.names.push_back(item.key());
    s.params.push_back(item.value());
    const bool alone =
        std::find(options.alone.begin(), options.alone.end(), item.key()) != options.alone.end();
    const auto unit = options.units.find(item.key());
    info.push_back({item.value().numel(), item.value().scalar_type(), item.value().requires_grad(),
                    alone, options.zero == 3 && unit != options.units.end() ? unit->second : -1});
    COHORT_CHECK(item.value().is_non_overlapping_and_dense(), ConfigError, "DDP: parameter '",
                 item.key(), "' is not dense (a view or an overlapping layout)");
  }
  for (const auto& buffer : module.buffers(/*recurse=*/true)) s.buffers.push_back(buffer);
  if (comm.size() == 1) {
    s.lone = true;  // nothing to agree with: copying gradients into buckets would be pure cost
    if (options.zero > 0) s.make_pieces();
    return;
  }
  broadcast_state(s);
  s.plan = plan_buckets(info, options.bucket_bytes, options.first_bucket_bytes);
  if (options.zero > 0) s.pad_buckets();
  index_buckets(s);
  if (options.zero > 0) s.flatten_parameters();
  make_buckets(s);
  s.scale = at::scalar_tensor(1.0 / comm.size(), at::TensorOptions().dtype(at::kDouble));
  if (options.zero > 0) s.make_pieces();
  install_hooks();
  begin_step();
}

// Each parameter's bucket and offset in it, and the hooks' bookkeeping.
void DistributedDataParallel::index_buckets(State& s) {
  s.bucket_of.assign(s.params.size(), -1);
  s.offset_of.assign(s.params.size(), 0);
  for (std::size_t b = 0; b < s.plan.size(); ++b) {
    const BucketSpec& spec = s.plan[b];
    for (std::size_t i = 0; i < spec.params.size(); ++i) {
      s.bucket_of[spec.params[i]] = static_cast<int>(b);
      s.offset_of[spec.params[i]] = spec.offsets[i];
    }
  }
  s.works.resize(s.plan.size());
  s.gathers.resize(s.plan.size());
  s.whole.assign(s.plan.size(), true);
  s.pending.assign(s.plan.size(), 0);
  s.ready.assign(s.params.size(), false);
  s.parts_seen.assign(s.params.size(), 0);
  s.parts_expected.assign(s.params.size(), 1);
  for (std::size_t p = 0; p < s.params.size(); ++p) {
    const auto it = s.options.arrivals.find(s.names[p]);
    if (it != s.options.arrivals.end()) s.parts_expected[p] = std::max(1, it->second);
  }
  s.index_units();
}

// Every rank starts from rank 0's parameters and buffers.
void DistributedDataParallel::broadcast_state(State& s) {
  at::NoGradGuard no_grad;  // parameters are leaves that require grad: copy into them silently
  for (auto& p : s.params) {
    if (s.options.same_start) break;
    if (p.is_contiguous()) {
      s.comm->broadcast(p, 0);
    } else {  // a dense layout such as channels-last: collectives take contiguous tensors
      at::Tensor copy = p.contiguous();
      s.comm->broadcast(copy, 0);
      p.copy_(copy);
    }
  }
  for (auto& b : s.buffers) s.comm->broadcast(b, 0);
}

// The gradient buckets and each parameter's slot in them (ZeRO 2: made per step, on demand).
void DistributedDataParallel::make_buckets(State& s) {
  s.slots.resize(s.params.size());
  s.flat.resize(s.plan.size());
  for (std::size_t b = 0; b < s.plan.size(); ++b) {
    const BucketSpec& spec = s.plan[b];
    const auto options = s.params[spec.params.front()].options();
    if (s.options.zero >= 2) continue;
    s.flat[b] = at::zeros({spec.numel}, options);
    if (s.options.compression != Compression::kNone) {
      COHORT_CHECK(spec.dtype == at::kFloat, ConfigError,
                   "DDP: compression needs float32 gradients, bucket ", b, " is ", spec.dtype);
      s.wire.push_back(at::empty({spec.numel}, options.dtype(wire_type(s.options.compression))));
    }
    for (const auto p : spec.params) s.slots[p] = s.make_slot(p, s.flat[b]);
  }
}

void DistributedDataParallel::install_hooks() {
  State& s = *state_;
  for (std::size_t p = 0; p < s.params.size(); ++p) {
    if (s.bucket_of[p] < 0) continue;
    if (s.slots[p].defined()) s.params[p].mutable_grad() = s.slots[p];
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
}

DistributedDataParallel::~DistributedDataParallel() {
  state_->active = false;
  for (auto& [accumulator, key] : state_->hooks) accumulator->del_post_hook(key);
  for (auto& work : state_->works) {
    if (work) work->wait();  // never leave an operation writing into freed buffers
  }
  for (auto& work : state_->gathers) {
    if (work) work->wait();
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
  if (s.options.broadcast_buffers) broadcast_buffers();
  // After a finished step, release the gradients: autograd then hands each new gradient over
  // without accumulating it into a zeroed slot, and absorb() writes it into the slot once. Between
  // no_sync micro-steps gradients are kept, so that they accumulate. (ZeRO 2 keeps none: its
  // shards start over instead.)
  if (s.slots_consumed) {
    for (std::size_t p = 0; p < s.params.size(); ++p) {
      if (s.bucket_of[p] >= 0 && s.params[p].grad().defined() &&
          s.params[p].grad().data_ptr() == s.slots[p].data_ptr()) {
        s.params[p].mutable_grad() = at::Tensor();
      }
    }
    std::fill(s.shard_fresh.begin(), s.shard_fresh.end(), true);
    s.slots_consumed = false;
  }
  if (!s.sync) return;  // accumulating: the readiness of the synced step is armed later
  s.arm();
}

void DistributedDataParallel::broadcast_buffers() {
  State& s = *state_;
  if (s.lone) return;
  at::NoGradGuard no_grad;
  for (auto& b : s.buffers) s.comm->broadcast(b, 0);
}

void DistributedDataParallel::broadcast_state() {
  if (!state_->lone) broadcast_state(*state_);
}

void DistributedDataParallel::finish_step() {
  State& s = *state_;
  if (!s.sync && s.options.zero < 2) return;
  if (s.sync) s.stats = DdpStepStats{};
  if (s.lone) {
    s.slots_consumed = s.sync;
    return;
  }
  s.stats.buckets_launched_in_backward = static_cast<int>(s.next_launch);
  complete_round();
  const auto start = std::chrono::steady_clock::now();
  if (s.options.zero >= 2) {
    s.retire_all();
  } else {
    for (std::size_t b = 0; b < s.plan.size(); ++b) {
      s.works[b]->wait();
      s.works[b].reset();
      const at::Tensor& sent = s.options.compression == Compression::kNone ? s.flat[b] : s.wire[b];
      s.stats.bytes_reduced += sent.numel() * static_cast<std::int64_t>(sent.element_size());
      if (s.options.compression != Compression::kNone) s.flat[b].copy_(s.wire[b]);
    }
  }
  s.stats.finish_wait_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!s.sync) return;  // ZeRO 2 accumulating: its shards go on summing
  // Arm the next step, so that a caller that skips begin_step() still gets correct hooks.
  s.arm();
  s.slots_consumed = true;
}

// After backward: parameters that got no gradient are an error naming them, or (with
// find_unused_parameters) contribute zeros; then every bucket left is launched.
void DistributedDataParallel::complete_round() {
  State& s = *state_;
  // ZeRO 2 re-arms after each backward's last bucket: nothing pending then is nothing missing.
  const bool started = s.options.zero < 2 || s.next_launch > 0 ||
                       std::any_of(s.ready.begin(), s.ready.end(), [](bool r) { return r; });
  if (started && std::any_of(s.pending.begin(), s.pending.end(), [](int n) { return n > 0; })) {
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
        const auto b = static_cast<std::size_t>(s.bucket_of[p]);
        if (s.options.zero >= 2) s.take_bucket(b);
        s.absorb(p);  // zeros, or what earlier no_sync steps accumulated
        s.ready[p] = true;
        if (--s.pending[b] == 0 && s.sharded_unit(b)) s.free_bucket(b);
      }
    }
  }
  if (started) s.launch_all_ready();
}

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& ddp)
    : ddp_(ddp), previous_(ddp.state_->sync) {
  ddp_.state_->sync = false;
}

DistributedDataParallel::NoSync::~NoSync() { ddp_.state_->sync = previous_; }

const std::vector<BucketSpec>& DistributedDataParallel::buckets() const { return state_->plan; }
const DdpStepStats& DistributedDataParallel::last_step() const { return state_->stats; }
const std::vector<ShardPiece>& DistributedDataParallel::shard() const { return state_->pieces; }
void DistributedDataParallel::gather_parameters() { state_->gather_parameters(); }

void zero_grad_in_place(const std::vector<at::Tensor>& params) {
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    at::Tensor grad = p.grad();
    grad.detach_();  // as LibTorch's zero_grad: no autograd history kept on a gradient
    grad.zero_();
  }
}

}  // namespace cohort::ddp
