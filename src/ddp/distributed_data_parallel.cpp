#include "cohort/ddp/distributed_data_parallel.hpp"

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

  // The gradient slot of parameter p: a tensor over the bucket's storage. Not an autograd view
  // (which narrow().view() would be), because LibTorch's Optimizer::zero_grad() calls detach_()
  // on gradients, and that refuses views; zero_() then clears the bucket in place.
  at::Tensor view_of(std::size_t p) const {
    const at::Tensor& param = params[p];
    const at::Tensor& bucket = flat[static_cast<std::size_t>(bucket_of[p])];
    at::Tensor slot = at::empty({0}, bucket.options());
    slot.set_(bucket.storage(), bucket.storage_offset() + offset_of[p], param.sizes(),
              c10::contiguous_strides(param.sizes()));
    return slot;
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

void DistributedDataParallel::State::mark_ready(std::size_t p) {
  if (!active || !sync || bucket_of[p] < 0 || ready[p]) return;
  // Autograd normally accumulates in place into our view; if it replaced the tensor, copy back.
  at::Tensor grad = params[p].grad();
  const at::Tensor view = view_of(p);
  if (!grad.defined() || grad.data_ptr() != view.data_ptr()) {
    if (grad.defined()) view.copy_(grad);
    params[p].mutable_grad() = view;
  }
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
    // Uncompressed buckets are averaged by the communicator, on its own thread, so that the
    // division overlaps backward too; compressed ones are summed and divided in fp32 later.
    comm::CollectiveOptions reduce;
    if (options.compression == Compression::kNone) {
      reduce.op = comm::ReduceOp::kAvg;
    } else {
      buffer.copy_(flat[next_launch]);
    }
    works[next_launch] = comm->all_reduce_async(buffer, reduce);
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
    COHORT_CHECK(item.value().is_contiguous(), ConfigError, "DDP: parameter '", item.key(),
                 "' is not contiguous");
  }
  for (const auto& buffer : module.buffers(/*recurse=*/true)) s.buffers.push_back(buffer);
  {
    at::NoGradGuard no_grad;  // parameters are leaves that require grad: copy into them silently
    for (auto& p : s.params) comm.broadcast(p, 0);
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
  s.works.resize(s.plan.size());
  s.pending.assign(s.plan.size(), 0);
  s.ready.assign(s.params.size(), false);
  for (std::size_t p = 0; p < s.params.size(); ++p) {
    if (s.bucket_of[p] < 0) continue;
    s.params[p].mutable_grad() = s.view_of(p);
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
  if (s.options.broadcast_buffers) {
    at::NoGradGuard no_grad;
    for (auto& b : s.buffers) s.comm->broadcast(b, 0);
  }
  for (std::size_t p = 0; p < s.params.size(); ++p) {
    if (s.bucket_of[p] < 0) continue;
    if (!s.params[p].grad().defined()) {  // reset to none by the caller: a zeroed view again
      at::Tensor view = s.view_of(p);
      view.zero_();
      s.params[p].mutable_grad() = view;
    }
  }
  if (!s.sync) return;  // accumulating: the readiness of the synced step is armed later
  for (std::size_t b = 0; b < s.plan.size(); ++b)
    s.pending[b] = static_cast<int>(s.plan[b].params.size());
  std::fill(s.ready.begin(), s.ready.end(), false);
  s.next_launch = 0;
}

void DistributedDataParallel::finish_step() {
  State& s = *state_;
  if (!s.sync) return;
  s.stats = DdpStepStats{};
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
        s.ready[p] = true;  // its slot holds zeros (or what earlier no_sync steps accumulated)
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
    if (s.options.compression != Compression::kNone) {
      s.flat[b].copy_(s.wire[b]);
      s.flat[b].div_(s.comm->size());
    }
  }
  s.stats.finish_wait_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  // Arm the next step, so that a caller that skips begin_step() still gets correct hooks.
  for (std::size_t b = 0; b < s.plan.size(); ++b)
    s.pending[b] = static_cast<int>(s.plan[b].params.size());
  std::fill(s.ready.begin(), s.ready.end(), false);
  s.next_launch = 0;
}

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& ddp)
    : ddp_(ddp), previous_(ddp.state_->sync) {
  ddp_.state_->sync = false;
}

DistributedDataParallel::NoSync::~NoSync() { ddp_.state_->sync = previous_; }

const std::vector<BucketSpec>& DistributedDataParallel::buckets() const { return state_->plan; }
const DdpStepStats& DistributedDataParallel::last_step() const { return state_->stats; }

}  // namespace cohort::ddp
