#include "cohort/comm/communicator.hpp"

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "cohort/env/environment.hpp"
#include "cohort/error.hpp"
#include "watchdog.hpp"

namespace cohort::comm {
namespace {

// A call the communicator refuses (a tensor on the wrong device, not contiguous, mismatched
// calls across ranks): a programming error, the same on every node, so exit 1, never the peer
// fault's 77 that would requeue it (comm/faults.hpp). Still a CommError for its callers.
class CallError : public CommError {
 public:
  explicit CallError(const std::string& what) : CommError(what, ExitCode::kInternal) {}
};

}  // namespace

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "?";
}

const char* to_string(Backend backend) { return backend == Backend::kMpi ? "mpi" : "nccl"; }

Communicator::Communicator(int rank, int size, CommOptions options,
                           std::shared_ptr<Watchdog> watchdog)
    : rank_(rank),
      size_(size),
      options_(options),
      recorder_(std::make_shared<FlightRecorder>(options.flight_recorder_entries)),
      watchdog_(std::move(watchdog)) {
  if (env::Environment::from_process().get("COHORT_COMM_DEBUG") ==
      std::optional<std::string>("1")) {
    options_.debug_check = true;
  }
  std::ostringstream name;
  name << "communicator of " << size << " ranks";
  watchdog_->watch(recorder_, name.str(), rank, size);
}

Communicator::~Communicator() = default;

const char* Communicator::op_name(OpKind kind) {
  switch (kind) {
    case OpKind::kAllReduce:
      return "all_reduce";
    case OpKind::kBroadcast:
      return "broadcast";
    case OpKind::kAllGather:
      return "all_gather";
    case OpKind::kReduceScatter:
      return "reduce_scatter";
    case OpKind::kSend:
      return "send";
    case OpKind::kRecv:
      return "recv";
    case OpKind::kBarrier:
      return "barrier";
    case OpKind::kGather:
      return "gather";
  }
  return "?";
}

void Communicator::validate(const Call& call) const {
  const char* name = op_name(call.kind);
  for (const at::Tensor* t :
       {call.has_out ? &call.out : nullptr, call.has_in ? &call.in : nullptr}) {
    if (t == nullptr) continue;
    COHORT_CHECK(t->defined(), CallError, name, ": tensor is undefined");
    COHORT_CHECK(t->is_contiguous(), CallError, name, ": tensor of shape ", t->sizes(),
                 " is not contiguous (call .contiguous() first)");
    COHORT_CHECK(device_ok(*t), CallError, name, ": tensor is on ", t->device(), " but the ",
                 to_string(backend()), " backend takes ", device_name(), " tensors");
  }
  if (call.has_out && call.has_in) {
    COHORT_CHECK(call.out.scalar_type() == call.in.scalar_type(), CallError, name, ": input is ",
                 call.in.scalar_type(), " but output is ", call.out.scalar_type());
  }
  const bool peer_needed = call.kind == OpKind::kBroadcast || call.kind == OpKind::kSend ||
                           call.kind == OpKind::kRecv || call.kind == OpKind::kGather;
  COHORT_CHECK(!peer_needed || (call.peer >= 0 && call.peer < size_), CallError, name, ": rank ",
               call.peer, " is not in this communicator of ", size_, " ranks");
  COHORT_CHECK(!(call.kind == OpKind::kSend || call.kind == OpKind::kRecv) || call.peer != rank_,
               CallError, name, ": a rank cannot ", name, " to itself");
  if (call.kind == OpKind::kAllGather) {
    COHORT_CHECK(call.out.numel() == call.in.numel() * size_, CallError, "all_gather: output has ",
                 call.out.numel(), " elements, expected ", size_, " x ", call.in.numel());
  }
  if (call.kind == OpKind::kGather && call.has_out) {  // the root's output
    COHORT_CHECK(call.out.numel() == call.in.numel() * size_, CallError, "gather: output has ",
                 call.out.numel(), " elements, expected ", size_, " x ", call.in.numel());
  }
  if (call.kind == OpKind::kReduceScatter) {
    COHORT_CHECK(call.in.numel() == call.out.numel() * size_, CallError,
                 "reduce_scatter: input has ", call.in.numel(), " elements, expected ", size_,
                 " x ", call.out.numel());
  }
  const bool reduces = call.kind == OpKind::kAllReduce || call.kind == OpKind::kReduceScatter;
  COHORT_CHECK(!(reduces && call.op == ReduceOp::kAvg) || call.out.is_floating_point(), CallError,
               op_name(call.kind), ": avg needs a floating-point tensor, not ",
               call.out.scalar_type());
}

std::array<std::int64_t, 4> Communicator::fingerprint(const Call& call) {
  const at::Tensor* t = call.has_in ? &call.in : (call.has_out ? &call.out : nullptr);
  return {static_cast<std::int64_t>(call.kind), t ? t->numel() : 0,
          t ? static_cast<std::int64_t>(t->scalar_type()) : -1,
          (call.kind == OpKind::kAllReduce || call.kind == OpKind::kReduceScatter)
              ? static_cast<std::int64_t>(call.op)
              : call.peer};
}

void Communicator::check_fingerprints(const std::array<std::int64_t, 4>& mine) {
  const auto all = gather_fingerprints(mine);
  for (int r = 0; r < size_; ++r) {
    const std::int64_t* theirs = &all[static_cast<size_t>(4 * r)];
    if (std::equal(mine.begin(), mine.end(), theirs)) continue;
    auto describe = [](const std::int64_t* f) {
      std::ostringstream out;
      out << op_name(static_cast<OpKind>(f[0])) << "(" << f[1] << " x "
          << (f[2] >= 0 ? c10::toString(static_cast<c10::ScalarType>(f[2])) : "none") << ", "
          << f[3] << ")";
      return out.str();
    };
    COHORT_THROW(CallError, "collective mismatch: rank ", rank_, " calls ", describe(mine.data()),
                 " but rank ", r, " calls ", describe(theirs));
  }
}

namespace {

using Call = Communicator::Call;

Call make_call(Communicator::OpKind kind, const at::Tensor* out, const at::Tensor* in, int peer,
               int tag, bool blocking) {
  Call call;
  call.kind = kind;
  if (out) call.out = *out;
  call.has_out = out != nullptr;
  if (in) call.in = *in;
  call.has_in = in != nullptr;
  call.peer = peer;
  call.tag = tag;
  call.blocking = blocking;
  return call;
}

}  // namespace

// Validates `call`, records it in the flight recorder and sets `on_done` to mark it finished there.
Communicator::Call Communicator::record(Call call, const CollectiveOptions& options,
                                        std::function<void()>* on_done) {
  call.op = options.op;
  validate(call);
  const at::Tensor* t = call.has_in ? &call.in : (call.has_out ? &call.out : nullptr);
  FlightRecord record;
  record.seq = next_seq_++;
  record.op = op_name(call.kind);
  record.numel = t ? t->numel() : 0;
  record.bytes = t ? static_cast<std::int64_t>(t->nbytes()) : 0;
  record.dtype = t ? c10::toString(t->scalar_type()) : "none";
  record.peer = call.peer;
  record.start = std::chrono::steady_clock::now();
  record.deadline =
      record.start + (options.timeout.count() > 0 ? options.timeout : options_.timeout);
  recorder_->started(record);
  std::weak_ptr<FlightRecorder> recorder = recorder_;
  *on_done = [recorder, seq = record.seq] {
    if (const auto r = recorder.lock()) r->finished(seq);
  };
  return call;
}

WorkPtr Communicator::issue(OpKind kind, const at::Tensor* out, const at::Tensor* in, int peer,
                            int tag, bool blocking, const CollectiveOptions& options) {
  reap_in_flight();
  std::function<void()> on_done;
  const Call call = record(make_call(kind, out, in, peer, tag, blocking), options, &on_done);
  const std::uint64_t seq = next_seq_ - 1;
  WorkPtr work = run(call, std::move(on_done));
  // Completion the backend sees only when asked (a posted send or receive): the watchdog asks.
  recorder_->set_probe(seq, [weak = std::weak_ptr<Work>(work)] {
    const auto w = weak.lock();
    return !w || w->poll();  // a dropped Work has marked its operation done
  });
  return work;
}

std::vector<WorkPtr> Communicator::p2p_group_async(const std::vector<Transfer>& transfers,
                                                   const CollectiveOptions& options) {
  reap_in_flight();
  std::vector<Call> calls;
  std::vector<std::function<void()>> on_done(transfers.size());
  const std::uint64_t first = next_seq_;
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const Transfer& t = transfers[i];
    const OpKind kind = t.send ? OpKind::kSend : OpKind::kRecv;
    calls.push_back(record(make_call(kind, t.send ? nullptr : &t.tensor,
                                     t.send ? &t.tensor : nullptr, t.peer, t.tag, false),
                           options, &on_done[i]));
  }
  std::vector<WorkPtr> works = run_group(calls, std::move(on_done));
  COHORT_CHECK(works.size() == calls.size(), Error, "p2p group: the backend returned ",
               works.size(), " works for ", calls.size(), " transfers");
  for (std::size_t i = 0; i < works.size(); ++i) {
    recorder_->set_probe(first + i, [weak = std::weak_ptr<Work>(works[i])] {
      const auto w = weak.lock();
      return !w || w->poll();
    });
  }
  return works;
}

std::vector<WorkPtr> Communicator::run_group(const std::vector<Call>& calls,
                                             std::vector<std::function<void()>> on_done) {
  std::vector<WorkPtr> works;
  for (std::size_t i = 0; i < calls.size(); ++i) works.push_back(run(calls[i], on_done[i]));
  return works;
}

void Communicator::keep_in_flight(const WorkPtr& work) { in_flight_.push_back(work); }

// A test() that throws (the operation failed) leaves the list whole, that Work included: its
// owner's wait() tells the error.
void Communicator::reap_in_flight() {
  std::vector<WorkPtr> kept;
  for (std::size_t i = 0; i < in_flight_.size(); ++i) {
    bool done = false;
    try {
      done = in_flight_[i]->test();
    } catch (...) {
      kept.insert(kept.end(), in_flight_.begin() + static_cast<std::ptrdiff_t>(i),
                  in_flight_.end());
      in_flight_ = std::move(kept);
      throw;
    }
    if (!done) kept.push_back(in_flight_[i]);
  }
  in_flight_ = std::move(kept);
}

void Communicator::release_in_flight() noexcept { in_flight_.clear(); }

WorkPtr Communicator::all_reduce_async(at::Tensor& t, const CollectiveOptions& o) {
  return issue(OpKind::kAllReduce, &t, nullptr, -1, 0, false, o);
}
WorkPtr Communicator::broadcast_async(at::Tensor& t, int root, const CollectiveOptions& o) {
  return issue(OpKind::kBroadcast, &t, nullptr, root, 0, false, o);
}
WorkPtr Communicator::all_gather_async(at::Tensor& out, const at::Tensor& in,
                                       const CollectiveOptions& o) {
  return issue(OpKind::kAllGather, &out, &in, -1, 0, false, o);
}
WorkPtr Communicator::reduce_scatter_async(at::Tensor& out, const at::Tensor& in,
                                           const CollectiveOptions& o) {
  return issue(OpKind::kReduceScatter, &out, &in, -1, 0, false, o);
}
WorkPtr Communicator::gather_async(at::Tensor& out, const at::Tensor& in, int root,
                                   const CollectiveOptions& o) {
  return issue(OpKind::kGather, rank_ == root ? &out : nullptr, &in, root, 0, false, o);
}
WorkPtr Communicator::send_async(const at::Tensor& t, int dst, int tag,
                                 const CollectiveOptions& o) {
  return issue(OpKind::kSend, nullptr, &t, dst, tag, false, o);
}
WorkPtr Communicator::recv_async(at::Tensor& t, int src, int tag, const CollectiveOptions& o) {
  return issue(OpKind::kRecv, &t, nullptr, src, tag, false, o);
}
WorkPtr Communicator::barrier_async(const CollectiveOptions& o) {
  return issue(OpKind::kBarrier, nullptr, nullptr, -1, 0, false, o);
}

void Communicator::all_reduce(at::Tensor& t, const CollectiveOptions& o) {
  drain();
  issue(OpKind::kAllReduce, &t, nullptr, -1, 0, true, o)->wait();
}
void Communicator::broadcast(at::Tensor& t, int root, const CollectiveOptions& o) {
  drain();
  issue(OpKind::kBroadcast, &t, nullptr, root, 0, true, o)->wait();
}
void Communicator::all_gather(at::Tensor& out, const at::Tensor& in, const CollectiveOptions& o) {
  drain();
  issue(OpKind::kAllGather, &out, &in, -1, 0, true, o)->wait();
}
void Communicator::reduce_scatter(at::Tensor& out, const at::Tensor& in,
                                  const CollectiveOptions& o) {
  drain();
  issue(OpKind::kReduceScatter, &out, &in, -1, 0, true, o)->wait();
}
void Communicator::gather(at::Tensor& out, const at::Tensor& in, int root,
                          const CollectiveOptions& o) {
  drain();
  issue(OpKind::kGather, rank_ == root ? &out : nullptr, &in, root, 0, true, o)->wait();
}
void Communicator::send(const at::Tensor& t, int dst, int tag, const CollectiveOptions& o) {
  send_async(t, dst, tag, o)->wait();
}
void Communicator::recv(at::Tensor& t, int src, int tag, const CollectiveOptions& o) {
  recv_async(t, src, tag, o)->wait();
}
void Communicator::barrier(const CollectiveOptions& o) {
  drain();
  issue(OpKind::kBarrier, nullptr, nullptr, -1, 0, true, o)->wait();
}

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  drain();
  return make_split(color, key);
}

void Communicator::set_step(std::int64_t step) { watchdog_->set_step(step); }

}  // namespace cohort::comm
