// DistributedDataParallel::State: the buckets, the hooks' bookkeeping and, with ZeRO, the shards;
// shared by distributed_data_parallel.cpp (buckets, hooks, plain data parallelism) and zero.cpp
// (flat parameters, shard pieces, reduce-scatter and all-gather). The autograd hooks hold it
// weakly, so that a hook firing after the wrapper is gone does nothing.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/strides.h>
#include <torch/csrc/autograd/function.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/comm/communicator.hpp"
#include "cohort/ddp/distributed_data_parallel.hpp"

namespace cohort::ddp {

struct DistributedDataParallel::State {
  comm::Communicator* comm = nullptr;
  DdpOptions options;
  std::vector<std::string> names;   // registration order
  std::vector<at::Tensor> params;   // registration order
  std::vector<at::Tensor> buffers;  // module buffers (BatchNorm statistics...)
  std::vector<BucketSpec> plan;     // with ZeRO each bucket's numel is padded to N parts
  std::vector<at::Tensor> flat;     // one per bucket (ZeRO 2: only while it is filled and sent)
  std::vector<at::Tensor> wire;     // compressed copies, when compressing
  std::vector<int> bucket_of;       // param index -> bucket, -1 when frozen
  std::vector<std::int64_t> offset_of;
  std::vector<int> pending;
  std::vector<bool> ready;
  std::vector<int> parts_expected;  // per parameter: gradient parts per backward (arrivals)
  std::vector<int> parts_seen;
  std::vector<comm::WorkPtr> works;
  std::size_t next_launch = 0;
  bool sync = true;
  bool active = true;
  DdpStepStats stats;
  // Keeps gradient accumulators alive (a variable holds them weakly) and the hooks removable.
  std::vector<std::pair<std::shared_ptr<torch::autograd::Node>, std::uintptr_t>> hooks;

  std::vector<at::Tensor> slots;  // per parameter: its gradient's place in the bucket
  at::Tensor scale;               // 1 / world size, as a 0-dim tensor
  bool lone = false;            // a communicator of one rank: plain gradients, no buckets, no hooks
  bool slots_consumed = false;  // a finish_step happened since the last backward

  // ZeRO (zero.cpp).
  std::vector<at::Tensor> flat_params;  // per bucket: the parameters' storage
  std::vector<at::Tensor> grad_shard;   // stage 2, per bucket: this rank's reduced gradients
  std::vector<bool> shard_fresh;        // stage 2: the next fold replaces instead of adding
  std::deque<std::size_t> in_flight;    // stage 2: buckets sent, not yet folded
  std::vector<ShardPiece> pieces;
  std::int64_t bucket_bytes_now = 0, peak_bucket_bytes = 0;  // stage 2
  // Stage 3 (zero3.cpp).
  std::vector<at::Tensor> param_shard;  // per bucket: this rank's part of the parameters
  at::Tensor shard_arena;               // the units' shards, when they share one dtype
  std::int64_t arena_used = 0;
  std::vector<int> unit_of_bucket;  // -1: kept whole
  std::vector<std::vector<std::size_t>> buckets_of_unit;
  bool units_contiguous = true;        // each unit's buckets follow each other in the plan
  std::vector<comm::WorkPtr> gathers;  // per bucket: an all-gather issued, not yet waited for
  std::vector<bool> whole;             // per bucket: the flat parameters hold memory
  std::int64_t gathered_bytes_now = 0, peak_gathered_bytes = 0;

  // The gradient slot of parameter p: a tensor over the bucket's storage. Not an autograd view
  // (which narrow().view() would be), because LibTorch's Optimizer::zero_grad() calls detach_()
  // on gradients, and that refuses views; zero_() then clears the bucket in place. The slot has
  // the parameter's strides when those are dense (a channels-last weight, say), as autograd
  // lays the gradient out like the parameter: absorbing it is then a straight copy.
  at::Tensor make_slot(std::size_t p, const at::Tensor& bucket) const;
  void absorb(std::size_t p);
  // Every bucket waits for all of its parameters again; nothing launched yet.
  void arm();
  void arm_bucket(std::size_t b);
  void mark_ready(std::size_t p);
  void launch_ready();      // from hooks: only when overlapping (always with ZeRO 2)
  void launch_all_ready();  // in bucket order, as far as buckets are complete
  void launch(std::size_t b);
  std::int64_t shard_numel(std::size_t b) const { return plan[b].numel / comm->size(); }
  at::Tensor own_part(const at::Tensor& bucket, std::size_t b) const {
    return bucket.narrow(0, comm->rank() * shard_numel(b), shard_numel(b));
  }

  // ZeRO (zero.cpp).
  void pad_buckets();
  void flatten_parameters();
  void place_bucket(std::size_t b, bool copy);
  void make_pieces();
  void take_bucket(std::size_t b);  // stage 2: a buffer for the bucket's first gradient
  void retire(std::size_t b);       // stage 2: wait, fold into the shard, free the buffer
  void retire_all();
  void gather_parameters();

  // Stage 3 (zero3.cpp).
  bool sharded_unit(std::size_t b) const { return options.zero == 3 && unit_of_bucket[b] >= 0; }
  void index_units();
  void make_shard_arena();
  void shard_bucket(std::size_t b);  // from flatten_parameters: its shard; a unit's freed
  void start_gather(std::size_t b);  // memory for the bucket, its all-gather issued
  void finish_gather(std::size_t b);
  void free_bucket(std::size_t b);
  void drop_memory(std::size_t b);  // the flat buffer's memory released in place
  const std::vector<std::size_t>* unit_buckets(int unit) const;
};

}  // namespace cohort::ddp
