// DistributedDataParallel: data-parallel gradient synchronisation for a torch::nn::Module.
//
// Bucket protocol:
//  1. Construction broadcasts parameters and buffers from rank 0, plans buckets (BucketPlan) and
//     gives every bucket one flat, persistent buffer with a slot per trainable parameter; after a
//     step each parameter's .grad() is its slot.
//  2. begin_step(), before forward: re-broadcasts buffers when asked, and after a finished step
//     releases the gradients, so that autograd hands each new gradient over instead of adding it
//     to a zeroed slot. (Between no_sync micro-steps gradients are kept and accumulate.)
//  3. During backward, a post-hook on each parameter's gradient accumulator moves the gradient
//     into its slot, divided by the world size on the way (one pass, no separate division of the
//     bucket), and marks it ready. A bucket whose parameters are all ready is summed by an
//     asynchronous all-reduce; buckets are launched strictly in bucket order, so every rank issues
//     the same collectives in the same order, and early buckets overlap the rest of backward.
//     (With overlap off, hooks only fill slots and finish_step reduces every bucket.)
//  4. finish_step(), after backward: launches what is left (only with find_unused_parameters;
//     otherwise a parameter without a gradient is an error naming it) and waits for every bucket.
//     With compression the wire buffer is bf16 or fp16, converted back to the fp32 bucket.
// On a communicator of one rank there is nothing to synchronise: no buckets, no hooks, and
// gradients stay where autograd puts them (begin_step still releases them after a finished step,
// so steps never accumulate into each other).
// Inside a no_sync() scope the hooks do nothing and finish_step() returns at once: gradients
// accumulate locally and the next synchronised step reduces their sum.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cohort/comm/communicator.hpp"
#include "cohort/ddp/bucket_plan.hpp"

namespace torch::nn {
class Module;
}

namespace cohort::ddp {

enum class Compression { kNone, kBf16, kFp16 };

struct DdpOptions {
  std::size_t bucket_bytes = 25u << 20;
  std::size_t first_bucket_bytes = 1u << 20;
  bool broadcast_buffers = true;  // at every begin_step (BatchNorm statistics, etc.)
  bool find_unused_parameters = false;
  Compression compression = Compression::kNone;
  // Start each bucket's all-reduce from the backward hooks (on the communicator's thread) so that
  // it overlaps the rest of backward. Off: reduce every bucket in finish_step on the calling
  // thread. Overlap pays where communication has hardware of its own (GPUs and NICs, spare
  // cores); where a rank owns one core and shared memory does the copying, the communication
  // thread competes with backward for that core and off is faster (docs/ddp.md has figures).
  bool overlap = true;
};

struct DdpStepStats {
  int buckets_launched_in_backward = 0;  // overlapped with backward
  double finish_wait_ms = 0;             // exposed communication: time blocked in finish_step
  std::int64_t bytes_reduced = 0;
};

class DistributedDataParallel {
 public:
  DistributedDataParallel(torch::nn::Module& module, comm::Communicator& comm,
                          DdpOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  void begin_step();
  void finish_step();

  // RAII scope for gradient accumulation without communication.
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool previous_;
  };
  NoSync no_sync() { return NoSync(*this); }

  const std::vector<BucketSpec>& buckets() const;
  const DdpStepStats& last_step() const;

  struct State;  // shared with the autograd hooks

 private:
  std::shared_ptr<State> state_;
};

// Zeroes the gradients of `params` in place, keeping their storage (DDP's bucket slots back
// them, and autograd then accumulates into the slot without a copy). LibTorch's own zero_grad()
// does this in 1.13 but sets gradients to none by default from 2.0.
void zero_grad_in_place(const std::vector<at::Tensor>& params);

}  // namespace cohort::ddp
