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
//
// ZeRO (DdpOptions::zero, over this communicator: the data-parallel group). Each bucket is padded
// to a multiple of the group size and cut into equal parts, part r being rank r's shard; the
// parameters themselves move into one flat buffer per bucket (their storage, same layout as the
// gradient bucket). shard() lists this rank's pieces (a parameter's elements inside the shard):
// the optimizer steps those instead of the parameters, so that its state exists for 1/N of them.
//  - Stage 1: a finished bucket is reduce-scattered in place instead of all-reduced (the same
//    bytes); a piece's gradient is its part of the bucket. Accumulation as above.
//  - Stage 2: also the gradients: a bucket's buffer exists only from its first gradient until its
//    reduce-scatter is done (at most kZeroBucketsInFlight after it are in flight), when this
//    rank's part is added into a persistent shard of 1/N and the buffer is freed; every backward
//    reduces (no_sync is ignored: accumulation sums the reduced shards).
//  - Stage 3: also the parameters. Each trainable parameter belongs to a unit (DdpOptions::units:
//    a block of the model) and a bucket holds one unit's; the pieces live in a persistent shard
//    of 1/N per bucket, and a unit's flat buffer holds memory only between acquire() (or
//    prefetch(), which issues the all-gather ahead) and release(), or until its gradients are all
//    in (a backward needs the parameters no more). The storage is freed and re-allocated in place,
//    so the module's parameters and the tensors autograd saved keep their identity. The caller
//    acquires a block's unit before its forward and before its backward (a hook on the block's
//    output gradient: train/zero_units.hpp). A parameter in no unit (one that several blocks use:
//    GPT's tied embedding) stays whole on every rank, as in stage 2. Gradients as in stage 2.
// After the optimizer step, gather_parameters() all-gathers every bucket's parameters in place
// (stage 3: the whole-kept ones; the units are freed, to be gathered from the new shards when
// next acquired). After a checkpoint load into the pieces it makes the parameters agree again.
// On a communicator of one rank, shard() is every trainable parameter, whole.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
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
  // ZeRO stage: 0 plain data parallelism; 1 optimizer state sharded; 2 also gradients; 3 also
  // parameters.
  int zero = 0;
  // ZeRO 3: the unit (0, 1, ...: a block) of each trainable parameter, by name. A parameter in
  // none stays whole on every rank.
  std::map<std::string, int> units;
  // Parameters (by name) that get a bucket of their own, so that ZeRO cuts them alike wherever
  // they are held: the tied copies on two pipeline stages, whose shards are then summed.
  std::vector<std::string> alone;
  // Parameters (by name) whose gradient arrives in several parts per backward: a module used by
  // several recomputed segments (pipeline/recompute.hpp) has its accumulator run once per
  // segment. Its gradient is taken after the last part.
  std::map<std::string, int> arrivals;
  // Every rank starts from the same values already (each drew them from the same generators):
  // no broadcast of the parameters from rank 0.
  bool same_start = false;
  // ZeRO 3: called with a unit just before its parameters move into their flat buffer (which is
  // cut into shards and freed at once): each rank gives a unit its values only then, so that
  // start-up never holds more than one unit whole (models/materialize.hpp).
  std::function<void(int unit)> materialize_unit;
};

// Stage 2: reduce-scatters in flight behind the bucket being filled (their buffers are held).
constexpr int kZeroBucketsInFlight = 2;

// ZeRO: a trainable parameter's elements inside this rank's shard.
struct ShardPiece {
  std::size_t param = 0;    // index in registration order (named_parameters)
  std::string name;         // the parameter's
  std::int64_t offset = 0;  // first element, in the parameter's flat row-major order
  // Flat view of those elements of the parameter (the parameter itself on one rank); its grad()
  // holds their reduced gradient after finish_step().
  at::Tensor value;
};

// Bytes this rank holds for training, by kind (the memory figures of `cohort bench zero`).
struct DdpMemory {
  std::int64_t parameter_bytes = 0;
  std::int64_t gradient_bytes = 0;       // persistent: buckets (stage < 2) or shards (stage 2)
  std::int64_t peak_bucket_bytes = 0;    // stage 2: the most bucket buffers held at once
  std::int64_t peak_gathered_bytes = 0;  // stage 3: the most units' parameters whole at once
};

struct DdpStepStats {
  int buckets_launched_in_backward = 0;  // overlapped with backward
  double finish_wait_ms = 0;             // exposed communication: time blocked in finish_step
  std::int64_t bytes_reduced = 0;        // all-reduced, or reduce-scattered (ZeRO)
  std::int64_t bytes_gathered = 0;       // ZeRO: parameters all-gathered after the step
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
  // Rank 0's buffers to every rank now (begin_step does it before each forward, with
  // DdpOptions::broadcast_buffers): a checkpoint then saves one value of each. Collective.
  void broadcast_buffers();
  // Rank 0's parameters and buffers to every rank, as construction does (values set again after
  // it: a restarting trainer's initial values made again). Collective.
  void broadcast_state();

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

  // ZeRO: what the optimizer steps (empty without ZeRO), and, after its step, the updated
  // shards to every rank. gather_parameters() does nothing without ZeRO.
  const std::vector<ShardPiece>& shard() const;
  void gather_parameters();
  DdpMemory memory() const;
  // ZeRO 3 (nothing otherwise): unit `unit`'s parameters whole on this rank (gathered now, or
  // waited for when prefetched); its all-gather issued now, to be waited for by acquire(); its
  // parameters' memory freed (an issued gather is waited for first). Collective in effect: every
  // rank of the group must gather the same units in the same order.
  void acquire(int unit);
  void prefetch(int unit);
  void release(int unit);

  struct State;  // shared with the autograd hooks

 private:
  static void broadcast_state(State& s);
  static void index_buckets(State& s);
  static void make_buckets(State& s);
  void install_hooks();
  void complete_round();

  std::shared_ptr<State> state_;
};

// Zeroes the gradients of `params` in place, keeping their storage (DDP's bucket slots back
// them, and autograd then accumulates into the slot without a copy). LibTorch's own zero_grad()
// does this in 1.13 but sets gradients to none by default from 2.0.
void zero_grad_in_place(const std::vector<at::Tensor>& params);

}  // namespace cohort::ddp
