#include "cohort/pipeline/recompute.hpp"

#include <ATen/Context.h>
#include <ATen/core/Generator.h>
#include <ATen/ops/empty.h>
#include <torch/autograd.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "common/torch_compat.hpp"

namespace cohort::pipeline {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The generators fn may draw from: the CPU's, and the input's device's when that is another.
std::vector<at::Generator> generators_for(const at::Tensor& x) {
  std::vector<at::Generator> out{at::detail::getDefaultCPUGenerator()};
  if (!x.device().is_cpu()) out.push_back(at::globalContext().defaultGenerator(x.device()));
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
                            std::int64_t fn) {
    (void)anchor;
    ctx->saved_data["fn"] = fn;
    const at::DeviceType device = x.device().type();
    ctx->saved_data["autocast"] = torch_compat::autocast_enabled(device);
    auto generators = generators_for(x);
    ctx->saved_data["rng"] = c10::List<at::Tensor>(states_of(generators));
    ctx->save_for_backward({x});
    return (*reinterpret_cast<const TensorFn*>(fn))(x, false);  // gradients are off here
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto& fn = *reinterpret_cast<const TensorFn*>(ctx->saved_data["fn"].toInt());
    const at::Tensor saved = ctx->get_saved_variables()[0];
    at::Tensor input = saved.detach();
    if (saved.requires_grad()) input.requires_grad_(true);
    auto generators = generators_for(saved);
    const auto now = states_of(generators);
    const auto list = ctx->saved_data["rng"].toTensorList();
    std::vector<at::Tensor> then;
    for (std::size_t i = 0; i < list.size(); ++i) then.push_back(list.get(i));
    set_states(generators, then);
    at::Tensor output;
    {
      at::AutoGradMode grad(true);
      AutocastAs autocast(saved.device().type(), ctx->saved_data["autocast"].toBool());
      output = fn(input, true);
    }
    set_states(generators, now);  // the rest of the run draws as if nothing were recomputed
    if (output.requires_grad()) torch::autograd::backward({output}, {grads[0]});
    return {saved.requires_grad() ? input.grad() : at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor recompute(const TensorFn& fn, const at::Tensor& x) {
  if (!at::GradMode::is_enabled()) return fn(x, false);
  const at::Tensor anchor = at::empty({0}).requires_grad_(true);
  return Recompute::apply(x, anchor, reinterpret_cast<std::int64_t>(&fn));
}

}  // namespace cohort::pipeline
