// Activation recompute (activation checkpointing): run a function of one tensor without keeping
// the activations it computes inside, and compute them again in the backward pass.
//
// Protocol: recompute(fn, x) runs fn(x) with gradients off and keeps only x (and the random
// generators' states and the autocast setting at that moment). When the backward pass reaches
// the result, fn runs again (its `again` argument true) on a detached copy of x with gradients on,
// the same random state
// (so dropout draws the same masks) and the same autocast, and the incoming gradient is
// back-propagated through that second run: x's gradient goes on, and the parameters fn uses get
// theirs there (their accumulators' hooks fire inside that inner backward, DDP's included).
// fn must stay alive until the backward pass is done; what it updates besides its result (a
// BatchNorm's running statistics) it must leave as it was when `again`. With gradients off,
// recompute() is fn(x, false). A parameter used by several recomputed pieces gets its gradient
// in as many parts, one per inner backward (DdpOptions::arrivals counts them).
// LibTorch's C++ API has no torch.utils.checkpoint; this is its reentrant variant.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>

namespace cohort::pipeline {

using TensorFn = std::function<at::Tensor(const at::Tensor& x, bool again)>;

at::Tensor recompute(const TensorFn& fn, const at::Tensor& x);

}  // namespace cohort::pipeline
