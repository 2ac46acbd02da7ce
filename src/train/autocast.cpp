#include <ATen/autocast_mode.h>

#include "common/torch_compat.hpp"
#include "train/step.hpp"

namespace cohort::train {

AutocastScope::AutocastScope(bool enabled, bool cuda) : enabled_(enabled), cuda_(cuda) {
  if (!enabled_) return;
  const at::DeviceType device = cuda_ ? at::kCUDA : at::kCPU;
  was_enabled_ = torch_compat::autocast_enabled(device);
  torch_compat::set_autocast(device, true, at::kBFloat16);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!enabled_) return;
  // The outermost scope drops the cache of weights cast to bf16: they change at every step.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  torch_compat::set_autocast_enabled(cuda_ ? at::kCUDA : at::kCPU, was_enabled_);
}

}  // namespace cohort::train
