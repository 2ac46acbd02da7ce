// ZeRO's part of DistributedDataParallel (protocol in distributed_data_parallel.hpp): padded
// buckets, parameters moved into flat per-bucket buffers, this rank's shard pieces, stage 2's
// transient gradient buckets, and the all-gather of updated parameters.
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/util/strides.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <chrono>

#include "cohort/error.hpp"
#include "ddp/ddp_state.hpp"

namespace cohort::ddp {
namespace {

// A flat tensor over `base`'s storage: `count` elements from element `offset` of `base`. Not an
// autograd view: the optimizer's pieces and their gradients are plain tensors.
at::Tensor flat_over(const at::Tensor& base, std::int64_t offset, std::int64_t count) {
  at::Tensor t = at::empty({0}, base.options());
  t.set_(base.storage(), base.storage_offset() + offset, {count}, {1});
  return t;
}

// Elements of bucket `spec` its parameters use; the rest, up to numel, is padding.
std::int64_t used_numel(const BucketSpec& spec, const std::vector<at::Tensor>& params) {
  return spec.params.empty() ? 0 : spec.offsets.back() + params[spec.params.back()].numel();
}

}  // namespace

// Each bucket is cut into N equal parts: padded with zeros to a multiple of N.
void DistributedDataParallel::State::pad_buckets() {
  const std::int64_t n = comm->size();
  for (auto& spec : plan) spec.numel = (spec.numel + n - 1) / n * n;
}

// The parameters' values move into one flat buffer per bucket (laid out like the gradient
// bucket, contiguous), so that a bucket's parameters are all-gathered in one call. set_data keeps
// each parameter's identity (the module, the optimizer and autograd still see the same tensor).
// Stage 3 cuts a unit's buckets into shards and frees them before the next unit's are made, so
// that start-up holds one unit beyond the model it was handed; with materialize_unit the unit's
// parameters are placed without values and given them there (no copy of the model is made).
void DistributedDataParallel::State::flatten_parameters() {
  at::NoGradGuard no_grad;
  flat_params.resize(plan.size());
  if (options.zero == 3) make_shard_arena();
  std::size_t first = 0;  // the current unit's first bucket
  std::vector<bool> given(buckets_of_unit.size(), false);
  for (std::size_t b = 0; b < plan.size(); ++b) {
    const int unit = unit_of_bucket[b];
    const bool deferred = unit >= 0 && options.materialize_unit && units_contiguous;
    // A unit whose buckets others come between gets its values before its first is made.
    if (unit >= 0 && options.materialize_unit && !units_contiguous && !given[unit]) {
      options.materialize_unit(unit);
      given[unit] = true;
    }
    place_bucket(b, /*copy=*/!deferred);
    if (options.zero != 3) continue;
    if (unit >= 0 && b + 1 < plan.size() && unit_of_bucket[b + 1] == unit) continue;
    if (deferred) options.materialize_unit(unit);
    for (std::size_t k = first; k <= b; ++k) shard_bucket(k);
    first = b + 1;
  }
  if (options.zero >= 2) {
    for (const auto& spec : plan) {
      grad_shard.push_back(at::zeros({spec.numel / comm->size()}, flat_params.front().options()));
    }
    shard_fresh.assign(plan.size(), true);
  }
}

// A flat buffer for bucket b, and its parameters moved there (with their values when `copy`).
void DistributedDataParallel::State::place_bucket(std::size_t b, bool copy) {
  const BucketSpec& spec = plan[b];
  at::Tensor& flat_b = flat_params[b];
  flat_b = at::zeros({spec.numel}, params[spec.params.front()].options());
  for (std::size_t i = 0; i < spec.params.size(); ++i) {
    at::Tensor& param = params[spec.params[i]];
    at::Tensor place = at::empty({0}, flat_b.options());
    place.set_(flat_b.storage(), flat_b.storage_offset() + spec.offsets[i], param.sizes(),
               c10::contiguous_strides(param.sizes()));
    if (copy) place.copy_(param);
    param.set_data(place);
  }
}

// This rank's pieces: each trainable parameter's elements inside the rank's part of its bucket,
// over the flat parameters, with their gradient over the bucket's part (stage 1) or the shard
// (stage 2). On one rank: every trainable parameter, whole, with its own gradient.
void DistributedDataParallel::State::make_pieces() {
  pieces.clear();
  if (lone) {
    for (std::size_t p = 0; p < params.size(); ++p) {
      if (params[p].requires_grad()) pieces.push_back({p, names[p], 0, params[p]});
    }
    return;
  }
  for (std::size_t b = 0; b < plan.size(); ++b) {
    const BucketSpec& spec = plan[b];
    const std::int64_t first = comm->rank() * shard_numel(b);
    const std::int64_t last = first + shard_numel(b);
    for (std::size_t i = 0; i < spec.params.size(); ++i) {
      const std::size_t p = spec.params[i];
      const std::int64_t begin = std::max(spec.offsets[i], first);
      const std::int64_t end = std::min(spec.offsets[i] + params[p].numel(), last);
      if (begin >= end) continue;
      ShardPiece piece{p, names[p], begin - spec.offsets[i],
                       options.zero == 3 ? flat_over(param_shard[b], begin - first, end - begin)
                                         : flat_over(flat_params[b], begin, end - begin)};
      piece.value.set_requires_grad(true);  // trainable, as the optimizer filters them
      piece.value.mutable_grad() = options.zero >= 2
                                       ? flat_over(grad_shard[b], begin - first, end - begin)
                                       : flat_over(flat[b], begin, end - begin);
      pieces.push_back(std::move(piece));
    }
  }
  // Registration order, as the optimizer and the checkpoints list parameters.
  std::sort(pieces.begin(), pieces.end(),
            [](const ShardPiece& a, const ShardPiece& b) { return a.param < b.param; });
}

// Stage 2: the bucket gets a buffer at its first gradient of a backward. A buffer still being
// sent from the previous backward (another micro-batch) is folded first.
void DistributedDataParallel::State::take_bucket(std::size_t b) {
  if (works[b]) retire(b);
  if (flat[b].defined()) return;
  const BucketSpec& spec = plan[b];
  flat[b] = at::empty({spec.numel}, flat_params[b].options());
  const std::int64_t used = used_numel(spec, params);
  flat[b].narrow(0, used, spec.numel - used).zero_();
  for (const auto p : spec.params) slots[p] = make_slot(p, flat[b]);
  bucket_bytes_now += static_cast<std::int64_t>(flat[b].nbytes());
  peak_bucket_bytes = std::max(peak_bucket_bytes, bucket_bytes_now);
}

// Stage 2: waits for the bucket's reduce-scatter, adds this rank's part into the shard (the
// first fold of a step replaces it) and frees the buffer.
void DistributedDataParallel::State::retire(std::size_t b) {
  works[b]->wait();
  works[b].reset();
  in_flight.erase(std::find(in_flight.begin(), in_flight.end(), b));
  const at::Tensor part = own_part(flat[b], b);
  if (shard_fresh[b]) {
    grad_shard[b].copy_(part);
    shard_fresh[b] = false;
  } else {
    grad_shard[b].add_(part);
  }
  stats.bytes_reduced += static_cast<std::int64_t>(flat[b].nbytes());
  bucket_bytes_now -= static_cast<std::int64_t>(flat[b].nbytes());
  flat[b] = at::Tensor();
  for (const auto p : plan[b].params) slots[p] = at::Tensor();
}

void DistributedDataParallel::State::retire_all() {
  while (!in_flight.empty()) retire(in_flight.front());
}

// After the optimizer stepped this rank's pieces: every bucket's parameters, all parts, to all
// (stage 3: the buckets kept whole; a unit's are freed, stale, and gathered when next acquired).
void DistributedDataParallel::State::gather_parameters() {
  if (options.zero == 0 || lone) return;
  std::vector<std::size_t> sent;
  for (std::size_t b = 0; b < plan.size(); ++b) {
    if (sharded_unit(b)) {
      free_bucket(b);
      continue;
    }
    gathers[b] = comm->all_gather_async(flat_params[b], own_part(flat_params[b], b));
    sent.push_back(b);
  }
  for (const auto b : sent) {
    gathers[b]->wait();
    gathers[b].reset();
    stats.bytes_gathered += static_cast<std::int64_t>(flat_params[b].nbytes());
  }
}

DdpMemory DistributedDataParallel::memory() const {
  const State& s = *state_;
  DdpMemory m;
  // With ZeRO the bucketed parameters live in the flat buffers: counted there, padding included
  // (stage 3: a unit's shard; its whole buffer only while gathered, peak_gathered_bytes).
  for (std::size_t b = 0; b < s.flat_params.size(); ++b) {
    const at::Tensor& held = s.sharded_unit(b) ? s.param_shard[b] : s.flat_params[b];
    m.parameter_bytes += static_cast<std::int64_t>(held.nbytes());
  }
  for (std::size_t p = 0; p < s.params.size(); ++p) {
    if (s.flat_params.empty() || s.bucket_of[p] < 0) {
      m.parameter_bytes += static_cast<std::int64_t>(s.params[p].nbytes());
    }
  }
  for (const auto& f : s.flat) {
    if (s.options.zero < 2 && f.defined()) m.gradient_bytes += f.nbytes();
  }
  for (const auto& g : s.grad_shard) m.gradient_bytes += static_cast<std::int64_t>(g.nbytes());
  if (s.lone) {
    for (const auto& p : s.params) {
      if (p.requires_grad()) m.gradient_bytes += static_cast<std::int64_t>(p.nbytes());
    }
  }
  m.peak_bucket_bytes = s.peak_bucket_bytes;
  m.peak_gathered_bytes = s.peak_gathered_bytes;
  return m;
}

}  // namespace cohort::ddp
