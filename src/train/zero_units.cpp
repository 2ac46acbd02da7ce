#include "train/zero_units.hpp"

#include <c10/core/GradMode.h>

#include <utility>

namespace cohort::train {

void connect_zero3(pipeline::Stage& stage, ddp::DistributedDataParallel& ddp) {
  const std::size_t blocks = stage.block_names().size();
  auto* d = &ddp;
  pipeline::BlockHooks hooks;
  hooks.before_forward = [d, blocks](std::size_t b, bool again) {
    d->acquire(static_cast<int>(b));
    // A recomputed segment's rerun goes straight into its backward: nothing ahead to fetch.
    if (!again && b + 1 < blocks) d->prefetch(static_cast<int>(b + 1));
  };
  hooks.after_forward = [d, blocks](std::size_t b, bool again) {
    // Kept: a rerun block (its backward follows at once, and frees it when its gradients are
    // in), and, when a backward will follow, the last block (its backward comes first).
    if (again || (c10::GradMode::is_enabled() && b + 1 == blocks)) return;
    d->release(static_cast<int>(b));
  };
  hooks.before_backward = [d](std::size_t b) {
    d->acquire(static_cast<int>(b));
    if (b > 0) d->prefetch(static_cast<int>(b - 1));
  };
  stage.set_block_hooks(std::move(hooks));
}

}  // namespace cohort::train
