// Communicator: collectives and point-to-point transfers over torch tensors, one backend per
// device kind (MPI for CPU tensors, NCCL for CUDA tensors), in the manner of c10d's Backend.
//
// Protocol:
//  - Every rank of the communicator issues the same collectives in the same order, from one
//    thread. Each call gets the next sequence number; the flight recorder keeps the last ones.
//  - `x_async` returns a Work at once; the operation runs in the background, in issue order. The
//    blocking form `x` first lets earlier asynchronous operations finish, then runs the operation
//    on the calling thread (no hand-off, the speed of the raw library call).
//  - Inputs are validated before anything is sent: defined, contiguous, on the backend's device,
//    of a supported dtype, with matching shapes. With CommOptions::debug_check (or
//    COHORT_COMM_DEBUG=1) the ranks also compare what they are calling, so that a mismatch is a
//    clear CommError on every rank instead of a hang or silent corruption.
//  - all_gather and reduce_scatter may run in place, as in NCCL: all_gather's input may be the
//    output's own part (output.narrow(0, rank * n, n)), and reduce_scatter's output the input's
//    own part; then this rank's part of the buffer is the operation's input or result (ZeRO
//    shards its flat buffers this way, with no second buffer).
//  - A watchdog thread watches every operation in flight. One that outlives its timeout is
//    logged (operation, sequence number, step, the ranks it waits for), the flight recorder is
//    dumped, and the job is aborted with exit code 76.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cohort/comm/flight_recorder.hpp"
#include "cohort/comm/types.hpp"
#include "cohort/comm/work.hpp"

namespace cohort::comm {

class Watchdog;

// Called on the watchdog's thread with the timeout's one-line message just before the job is
// aborted (the monitor writes it to metrics.jsonl). An empty function removes the observer.
void set_timeout_observer(std::function<void(const std::string&)> observer);

class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  virtual Backend backend() const = 0;

  WorkPtr all_reduce_async(at::Tensor& tensor, const CollectiveOptions& options = {});
  WorkPtr broadcast_async(at::Tensor& tensor, int root, const CollectiveOptions& options = {});
  // output holds size() * input.numel() elements: rank r's input lands at [r * n, (r + 1) * n).
  WorkPtr all_gather_async(at::Tensor& output, const at::Tensor& input,
                           const CollectiveOptions& options = {});
  // input holds size() * output.numel() elements; rank r gets the reduction of slice r.
  WorkPtr reduce_scatter_async(at::Tensor& output, const at::Tensor& input,
                               const CollectiveOptions& options = {});
  // Every rank's input to `root`, in rank order: there output holds size() * input.numel()
  // elements (rank r's input at [r * n, (r + 1) * n)); on the other ranks output is neither read
  // nor written and may be undefined. What a summary for one rank needs, at O(n) bytes per
  // rank where all_gather sends every rank everything.
  WorkPtr gather_async(at::Tensor& output, const at::Tensor& input, int root,
                       const CollectiveOptions& options = {});
  WorkPtr send_async(const at::Tensor& tensor, int dst, int tag = 0,
                     const CollectiveOptions& options = {});
  WorkPtr recv_async(at::Tensor& tensor, int src, int tag = 0,
                     const CollectiveOptions& options = {});
  WorkPtr barrier_async(const CollectiveOptions& options = {});

  // One send or receive of a group (p2p_group_async).
  struct Transfer {
    bool send = false;  // true: send `tensor` to `peer`; false: receive into it from `peer`
    at::Tensor tensor;
    int peer = -1;
    int tag = 0;
  };
  // Starts `transfers` together and returns one Work per transfer, in their order. On NCCL they
  // are one ncclGroupStart/ncclGroupEnd, so that none waits behind another on the communicator's
  // in-order stream: two ranks that each send to the other and then receive from it would
  // otherwise wait for each other forever (each GPU stuck in its send). Every Work of such a group
  // completes when the whole group has. On MPI each is posted at once (MPI_Isend/MPI_Irecv) and
  // completes on its own. Each transfer is validated and recorded as its own send or recv.
  std::vector<WorkPtr> p2p_group_async(const std::vector<Transfer>& transfers,
                                       const CollectiveOptions& options = {});

  void all_reduce(at::Tensor& tensor, const CollectiveOptions& options = {});
  void broadcast(at::Tensor& tensor, int root, const CollectiveOptions& options = {});
  void all_gather(at::Tensor& output, const at::Tensor& input,
                  const CollectiveOptions& options = {});
  void reduce_scatter(at::Tensor& output, const at::Tensor& input,
                      const CollectiveOptions& options = {});
  void gather(at::Tensor& output, const at::Tensor& input, int root,
              const CollectiveOptions& options = {});
  void send(const at::Tensor& tensor, int dst, int tag = 0, const CollectiveOptions& options = {});
  void recv(at::Tensor& tensor, int src, int tag = 0, const CollectiveOptions& options = {});
  void barrier(const CollectiveOptions& options = {});

  // A sub-communicator of the ranks that passed the same color, ordered by key (then rank).
  // Collective over this communicator. A negative color takes part but gets nullptr.
  std::unique_ptr<Communicator> split(int color, int key);

  // The training step, named in watchdog messages.
  void set_step(std::int64_t step);
  const FlightRecorder& flight_recorder() const { return *recorder_; }
  const CommOptions& options() const { return options_; }

 public:  // (types shared with backends)
  // What one call is about; also the debug-check fingerprint.
  enum class OpKind : int {
    kAllReduce,
    kBroadcast,
    kAllGather,
    kReduceScatter,
    kSend,
    kRecv,
    kBarrier,
    kGather
  };
  // Tensors are held by value (shared handles), so that an asynchronous operation keeps their
  // storage alive whatever the caller does with its own handle.
  struct Call {
    OpKind kind;
    bool has_out = false;
    at::Tensor out;  // written by the operation (all_reduce/broadcast: in place)
    bool has_in = false;
    at::Tensor in;  // read by the operation
    ReduceOp op = ReduceOp::kSum;
    int peer = -1;  // root, destination or source
    int tag = 0;
    bool blocking = false;
  };

 protected:
  Communicator(int rank, int size, CommOptions options, std::shared_ptr<Watchdog> watchdog);

  // Backends implement these. `run` executes one validated call: blocking calls on the caller's
  // thread, asynchronous ones in issue order in the background; it returns the call's Work.
  // `on_done` must be invoked once the operation has completed (successfully or not).
  virtual WorkPtr run(const Call& call, std::function<void()> on_done) = 0;
  // Runs validated sends and receives as one group (p2p_group_async); one Work per call. The
  // default runs each through run(), independently (right for MPI's non-blocking transfers).
  virtual std::vector<WorkPtr> run_group(const std::vector<Call>& calls,
                                         std::vector<std::function<void()>> on_done);
  // Blocks until every asynchronous operation issued so far has completed.
  virtual void drain() = 0;
  virtual std::unique_ptr<Communicator> make_split(int color, int key) = 0;
  // Debug check: all-gathers `fingerprint` (4 integers) from every rank, on the operation's own
  // stream of calls (so it stays in order).
  virtual std::vector<std::int64_t> gather_fingerprints(
      const std::array<std::int64_t, 4>& mine) = 0;
  virtual bool device_ok(const at::Tensor& tensor) const = 0;
  virtual const char* device_name() const = 0;

  // For backends: checks every rank's fingerprint and throws CommError naming the mismatch.
  void check_fingerprints(const std::array<std::int64_t, 4>& mine);
  static std::array<std::int64_t, 4> fingerprint(const Call& call);
  static const char* op_name(OpKind kind);
  std::shared_ptr<Watchdog> watchdog() const { return watchdog_; }
  // For backends whose Work holds the operation's tensors until it completes (posted transfers,
  // operations queued on a CUDA stream): the communicator keeps such a Work until it has, so
  // that a caller who drops its Work and its tensors at once never frees memory the library
  // still reads or writes (c10d keeps its Works for the same reason). Completed ones are let go
  // at the next call. A backend's destructor calls release_in_flight() before it frees its
  // library handles.
  void keep_in_flight(const WorkPtr& work);
  void release_in_flight() noexcept;

 private:
  WorkPtr issue(OpKind kind, const at::Tensor* out, const at::Tensor* in, int peer, int tag,
                bool blocking, const CollectiveOptions& options);
  void validate(const Call& call) const;

  int rank_;
  int size_;
  CommOptions options_;
  std::shared_ptr<FlightRecorder> recorder_;
  std::shared_ptr<Watchdog> watchdog_;
  void reap_in_flight();
  Call record(Call call, const CollectiveOptions& options, std::function<void()>* on_done);

  std::uint64_t next_seq_ = 0;
  std::vector<WorkPtr> in_flight_;
};

}  // namespace cohort::comm
