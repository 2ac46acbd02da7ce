#include <ATen/autocast_mode.h>

#include "train/step.hpp"

namespace cohort::train {

AutocastScope::AutocastScope(bool enabled, bool cuda) : enabled_(enabled), cuda_(cuda) {
  if (!enabled_) return;
  if (cuda_) {
    was_enabled_ = at::autocast::is_enabled();
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
  } else {
    was_enabled_ = at::autocast::is_cpu_enabled();
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
  }
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!enabled_) return;
  // The outermost scope drops the cache of weights cast to bf16: they change at every step.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  if (cuda_) {
    at::autocast::set_enabled(was_enabled_);
  } else {
    at::autocast::set_cpu_enabled(was_enabled_);
  }
}

}  // namespace cohort::train
