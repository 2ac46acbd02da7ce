#include "cohort/pipeline/recompute.hpp"

#include <ATen/Context.h>
#include <ATen/core/Generator.h>
#include <ATen/ops/empty.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/torch_compat.hpp"

namespace cohort::pipeline {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The devices fn computes on: its input's and those it was given (a segment's blocks may sit on
// other devices than its input: the first segment's input is the batch, on the CPU).
std::vector<c10::Device> devices_of(const at::Tensor& x, const std::vector<c10::Device>& given) {
  std::vector<c10::Device> out{c10::Device(c10::kCPU)};
  auto add = [&out](const c10::Device& d) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  add(x.device());
  for (const auto& d : given) add(d);
  return out;
}

// The generators fn may draw from: the CPU's, and each of its devices' when they are others.
std::vector<at::Generator> generators_for(const std::vector<c10::Device>& devices) {
  std::vector<at::Generator> out{at::detail::getDefaultCPUGenerator()};
  for (const auto& d : devices) {
    if (!d.is_cpu()) out.push_back(at::globalContext().defaultGenerator(d));
  }
  return out;
}

// The device types whose autocast fn's ops follow (CPU, and CUDA when fn runs there).
std::vector<at::DeviceType> types_of(const std::vector<c10::Device>& devices) {
  std::vector<at::DeviceType> out;
  for (const auto& d : devices) {
    if (std::find(out.begin(), out.end(), d.type()) == out.end()) out.push_back(d.type());
  }
  return out;
}

c10::List<int64_t> encode(const std::vector<c10::Device>& devices) {
  c10::List<int64_t> out;
  for (const auto& d : devices) {
    out.push_back(static_cast<int64_t>(d.type()));
    out.push_back(d.index());
  }
  return out;
}

std::vector<c10::Device> decode(const c10::List<int64_t>& list) {
  std::vector<c10::Device> out;
  for (std::size_t i = 0; i + 1 < list.size(); i += 2) {
    out.emplace_back(static_cast<c10::DeviceType>(list.get(i)),
                     static_cast<c10::DeviceIndex>(list.get(i + 1)));
  }
  return out;
}

std::vector<at::Tensor> states_of(std::vector<at::Generator>& generators) {
  std::vector<at::Tensor> states;
  for (auto& g : generators) {
    std::lock_guard<std::mutex> lock(g.mutex());
    states.push_back(g.get_state());
  }
  return states;
}

void set_states(std::vector<at::Generator>& generators, const std::vector<at::Tensor>& states) {
  for (std::size_t i = 0; i < generators.size(); ++i) {
    std::lock_guard<std::mutex> lock(generators[i].mutex());
    generators[i].set_state(states[i]);
  }
}

// The autocast of the forward pass, set again around the recomputation (backward runs outside
// the trainer's autocast scope). Cohort autocasts to bfloat16 only.
class AutocastAs {
 public:
  AutocastAs(at::DeviceType device, bool enabled)
      : device_(device), was_(torch_compat::autocast_enabled(device)) {
    torch_compat::set_autocast(device_, enabled, at::kBFloat16);
    at::autocast::increment_nesting();
  }
  ~AutocastAs() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    torch_compat::set_autocast_enabled(device_, was_);
  }
  AutocastAs(const AutocastAs&) = delete;
  AutocastAs& operator=(const AutocastAs&) = delete;

 private:
  at::DeviceType device_;
  bool was_;
};

struct Recompute : public torch::autograd::Function<Recompute> {
  // `anchor` requires grad, so that a node is recorded even when x does not (the first block's
  // data, integer tokens): the parameters inside fn still need their gradients.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& anchor,
                            std::int64_t fn, c10::List<int64_t> devices) {
    (void)anchor;
    ctx->saved_data["fn"] = fn;
    const auto on = decode(devices);
    c10::List<bool> autocast;
    for (const auto type : types_of(on)) autocast.push_back(torch_compat::autocast_enabled(type));
    ctx->saved_data["devices"] = devices;
    ctx->saved_data["autocast"] = autocast;
    auto generators = generators_for(on);
    ctx->saved_data["rng"] = c10::List<at::Tensor>(states_of(generators));
    ctx->save_for_backward({x});
    return (*reinterpret_cast<const TensorFn*>(fn))(x, false);  // gradients are off here
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto& fn = *reinterpret_cast<const TensorFn*>(ctx->saved_data["fn"].toInt());
    const at::Tensor saved = ctx->get_saved_variables()[0];
    at::Tensor input = saved.detach();
    if (saved.requires_grad()) input.requires_grad_(true);
    const auto on = decode(ctx->saved_data["devices"].toIntList());
    auto generators = generators_for(on);
    const auto now = states_of(generators);
    const auto list = ctx->saved_data["rng"].toTensorList();
    std::vector<at::Tensor> then;
    for (std::size_t i = 0; i < list.size(); ++i) then.push_back(list.get(i));
    set_states(generators, then);
    at::Tensor output;
    {
      at::AutoGradMode grad(true);
      const auto types = types_of(on);
      const auto autocast = ctx->saved_data["autocast"].toBoolList();
      std::vector<std::unique_ptr<AutocastAs>> scopes;
      for (std::size_t i = 0; i < types.size(); ++i) {
        scopes.push_back(std::make_unique<AutocastAs>(types[i], autocast.get(i)));
      }
      output = fn(input, true);
    }
    set_states(generators, now);  // the rest of the run draws as if nothing were recomputed
    if (output.requires_grad()) torch::autograd::backward({output}, {grads[0]});
    return {saved.requires_grad() ? input.grad() : at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

at::Tensor recompute(const TensorFn& fn, const at::Tensor& x,
                     const std::vector<c10::Device>& devices) {
  if (!at::GradMode::is_enabled()) return fn(x, false);
  const at::Tensor anchor = at::empty({0}).requires_grad_(true);
  return Recompute::apply(x, anchor, reinterpret_cast<std::int64_t>(&fn),
                          encode(devices_of(x, devices)));
}

}  // namespace cohort::pipeline
