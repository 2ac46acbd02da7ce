// ZeRO stage 3's part of DistributedDataParallel (protocol in distributed_data_parallel.hpp):
// units of buckets, the persistent parameter shards, and each unit's flat buffer freed and
// re-allocated in place around its all-gather.
//
// Why in place: the module's parameters are tensors over the flat buffer's storage, and autograd
// saves those very tensors for backward. Giving the storage new memory (rather than the
// parameters new tensors) keeps every holder valid, and a holder that looks while the unit is
// freed sees zero bytes rather than stale values.
#include <ATen/ops/empty.h>
#include <c10/core/Allocator.h>
#include <c10/core/StorageImpl.h>

#include <algorithm>

#include "cohort/error.hpp"
#include "ddp/ddp_state.hpp"

namespace cohort::ddp {
namespace {

c10::StorageImpl& storage_of(const at::Tensor& t) { return *t.storage().unsafeGetStorageImpl(); }

std::int64_t bytes_of(const at::Tensor& t) { return static_cast<std::int64_t>(t.nbytes()); }

}  // namespace

// Each bucket's unit (that of its parameters: the plan never mixes units) and each unit's buckets.
void DistributedDataParallel::State::index_units() {
  unit_of_bucket.assign(plan.size(), -1);
  buckets_of_unit.clear();
  if (options.zero != 3) return;
  for (std::size_t b = 0; b < plan.size(); ++b) {
    const auto it = options.units.find(names[plan[b].params.front()]);
    if (it == options.units.end() || it->second < 0) continue;
    unit_of_bucket[b] = it->second;
    const auto u = static_cast<std::size_t>(it->second);
    if (buckets_of_unit.size() <= u) buckets_of_unit.resize(u + 1);
    buckets_of_unit[u].push_back(b);
  }
  for (const auto& buckets : buckets_of_unit) {
    for (std::size_t i = 1; i < buckets.size(); ++i) {
      if (buckets[i] != buckets[i - 1] + 1) units_contiguous = false;
    }
  }
}

// The units' shards in one buffer, made before any unit is: the units' transient buffers (their
// values, their flat buffer) then take the same memory one unit after another. Each shard made
// apart, between them, left holes in the heap that the next unit's did not fit (the start-up of
// a 38 M-parameter GPT on 4 ranks grew by 8 MiB per unit for a 3 MiB shard).
void DistributedDataParallel::State::make_shard_arena() {
  std::int64_t total = 0;
  for (std::size_t b = 0; b < plan.size(); ++b) {
    if (!sharded_unit(b)) continue;
    if (plan[b].dtype != plan.front().dtype) return;  // mixed: each shard apart
    total += shard_numel(b);
  }
  const at::Tensor& first = params[plan.front().params.front()];
  shard_arena = at::empty({total}, first.options().requires_grad(false));
}

// From flatten_parameters(), bucket by bucket: a unit's pieces move to a shard of their own and
// its flat buffer is freed; a bucket kept whole keeps its pieces over the flat buffer, as in
// stage 2.
void DistributedDataParallel::State::shard_bucket(std::size_t b) {
  at::NoGradGuard no_grad;
  param_shard.resize(plan.size());
  const at::Tensor part = own_part(flat_params[b], b);
  if (!sharded_unit(b)) {
    param_shard[b] = part;
    return;
  }
  if (shard_arena.defined()) {
    param_shard[b] = shard_arena.narrow(0, arena_used, part.numel()).copy_(part);
    arena_used += part.numel();
  } else {
    param_shard[b] = part.clone();
  }
  drop_memory(b);  // made for the start-up only: never counted as gathered
}

void DistributedDataParallel::State::start_gather(std::size_t b) {
  at::NoGradGuard no_grad;
  const at::Tensor& flat_b = flat_params[b];
  c10::StorageImpl& storage = storage_of(flat_b);
  const auto bytes = static_cast<std::size_t>(bytes_of(flat_b));
  storage.set_data_ptr_noswap(storage.allocator()->allocate(bytes));
  storage.set_nbytes(bytes);
  whole[b] = true;
  gathered_bytes_now += bytes_of(flat_b);
  peak_gathered_bytes = std::max(peak_gathered_bytes, gathered_bytes_now);
  at::Tensor part = own_part(flat_b, b);
  part.copy_(param_shard[b]);
  gathers[b] = comm->all_gather_async(flat_params[b], part);
}

void DistributedDataParallel::State::finish_gather(std::size_t b) {
  gathers[b]->wait();
  gathers[b].reset();
  stats.bytes_gathered += bytes_of(flat_params[b]);
}

void DistributedDataParallel::State::free_bucket(std::size_t b) {
  if (gathers[b]) finish_gather(b);  // never free memory a collective still writes
  if (!whole[b]) return;
  drop_memory(b);
  gathered_bytes_now -= bytes_of(flat_params[b]);
}

void DistributedDataParallel::State::drop_memory(std::size_t b) {
  c10::StorageImpl& storage = storage_of(flat_params[b]);
  storage.set_data_ptr_noswap(c10::DataPtr(nullptr, flat_params[b].device()));
  storage.set_nbytes(0);
  whole[b] = false;
}

// Unit `unit`'s buckets; nullptr where there is nothing to gather (not stage 3, one rank, a
// parameter in no unit, a block without trainable parameters).
const std::vector<std::size_t>* DistributedDataParallel::State::unit_buckets(int unit) const {
  if (options.zero != 3 || lone || unit < 0) return nullptr;
  const auto u = static_cast<std::size_t>(unit);
  return u < buckets_of_unit.size() ? &buckets_of_unit[u] : nullptr;
}

void DistributedDataParallel::acquire(int unit) {
  State& s = *state_;
  const auto* buckets = s.unit_buckets(unit);
  if (buckets == nullptr) return;
  for (const auto b : *buckets) {
    if (!s.whole[b]) s.start_gather(b);
  }
  for (const auto b : *buckets) {
    if (s.gathers[b]) s.finish_gather(b);
  }
}

void DistributedDataParallel::prefetch(int unit) {
  State& s = *state_;
  const auto* buckets = s.unit_buckets(unit);
  if (buckets == nullptr) return;
  for (const auto b : *buckets) {
    if (!s.whole[b]) s.start_gather(b);
  }
}

void DistributedDataParallel::release(int unit) {
  State& s = *state_;
  const auto* buckets = s.unit_buckets(unit);
  if (buckets == nullptr) return;
  for (const auto b : *buckets) s.free_bucket(b);
}

}  // namespace cohort::ddp
