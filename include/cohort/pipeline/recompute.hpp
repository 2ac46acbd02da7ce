// Activation recompute (activation checkpointing): run a function of one tensor without keeping
// the activations it computes inside, and compute them again in the backward pass.
//
// Protocol: recompute(fn, x) runs fn(x) with gradients off and keeps only x (and the random
// generators' states and the autocast settings at that moment, of every device fn runs on). When
// the backward pass reaches the result, fn runs again (its `again` argument true) on a detached
// copy of x with gradients on, the same random state (so dropout draws the same masks) and the same
// autocast, and the incoming gradient is back-propagated through that second run: x's gradient goes
// on, and the parameters fn uses get theirs there (their accumulators' hooks fire inside that inner
// backward, DDP's included). fn must stay alive until the backward pass is done; what it updates
// besides its result (a BatchNorm's running statistics) it must leave as it was when `again`. With
// gradients off, recompute() is fn(x, false). A parameter used by several recomputed pieces gets
// its gradient in as many parts, one per inner backward (DdpOptions::arrivals counts them).
// LibTorch's C++ API has no torch.utils.checkpoint; this is its reentrant variant.
#pragma once

#include <ATen/core/Tensor.h>

#include <c10/core/Device.h>

#include <functional>
#include <vector>

namespace cohort::pipeline {

using TensorFn = std::function<at::Tensor(const at::Tensor& x, bool again)>;

// `devices`: where fn computes besides x's device (a segment's blocks on other devices than its
// input). The random state and the autocast setting kept are those of the CPU and of each of
// these devices, so that a segment whose input arrives from the CPU still replays its GPU's
// dropout masks and bf16 autocast.
at::Tensor recompute(const TensorFn& fn, const at::Tensor& x,
                     const std::vector<c10::Device>& devices = {});

}  // namespace cohort::pipeline
