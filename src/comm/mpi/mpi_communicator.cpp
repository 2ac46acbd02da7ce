#include "mpi_communicator.hpp"

#include <ATen/ops/div.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "../completion_work.hpp"
#include "mpi_check.hpp"
#include "mpi_types.hpp"

namespace cohort::comm {
namespace {

// `part` is `whole`'s part number `rank` (in-place all_gather and reduce_scatter).
bool own_part(const at::Tensor& whole, const at::Tensor& part, int rank) {
  const auto* base = static_cast<const char*>(whole.data_ptr());
  return part.data_ptr() == base + static_cast<std::ptrdiff_t>(rank) * part.nbytes();
}

int count_of(const at::Tensor& t, const char* op) {
  COHORT_CHECK(t.numel() <= INT_MAX, CommError, op, ": ", t.numel(),
               " elements exceed MPI's int count; split the tensor");
  return static_cast<int>(t.numel());
}

int rank_of(MPI_Comm comm) {
  int rank = 0;
  COHORT_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  return rank;
}

int size_of(MPI_Comm comm) {
  int size = 0;
  COHORT_MPI_CHECK(MPI_Comm_size(comm, &size));
  return size;
}

// The buffers of transfers dropped unfinished, kept to the process's end: MPI may still write
// into a receive's or read a send's. Only a communicator's destruction drops an unfinished
// transfer (it keeps each one until complete otherwise), so this holds what was in flight at a
// teardown, nothing more.
void keep_to_the_end(at::Tensor tensor) noexcept {
  static std::mutex mutex;
  static std::vector<at::Tensor> kept;
  try {
    std::lock_guard<std::mutex> lock(mutex);
    kept.push_back(std::move(tensor));
  } catch (const std::bad_alloc&) {  // no memory for one more entry: leaked instead of freed
    if (tensor.defined()) c10::raw::intrusive_ptr::incref(tensor.unsafeGetTensorImpl());
  }
}

// A posted MPI_Isend/MPI_Irecv. MPI progresses it whenever MPI is entered: in wait()/test() here,
// and in any collective the worker thread is running meanwhile. It holds the tensor MPI reads or
// writes, so that the storage outlives the transfer whatever the caller does with its handle.
class RequestWork final : public PolledWork {
 public:
  RequestWork(MPI_Request request, at::Tensor tensor, std::function<void()> on_done)
      : PolledWork(std::move(on_done)), request_(request), tensor_(std::move(tensor)) {}
  ~RequestWork() override {
    // Dropped unfinished (its communicator went): the request let go, and MPI completes it on its
    // own into the buffer kept here. A receive is not cancelled: a peer's large send to it then
    // still completes instead of waiting for a match that never comes. After MPI_Finalize no
    // MPI call is allowed, and nothing can touch the buffer any more.
    if (done()) return;
    int finalized = 0;
    MPI_Finalized(&finalized);  // return codes ignored: destructors never throw
    if (!finalized) MPI_Request_free(&request_);
    keep_to_the_end(std::move(tensor_));
  }
  bool test() override {
    std::lock_guard<std::mutex> lock(mutex());
    return test_locked();
  }
  void wait() override {
    std::lock_guard<std::mutex> lock(mutex());
    if (done()) return;
    COHORT_MPI_CHECK(MPI_Wait(&request_, MPI_STATUS_IGNORE));
    finish();
  }

 private:
  // An MPI_Test (the watchdog's poll() too, unless the owner is testing or waiting right now).
  bool test_locked() override {
    if (done()) return true;
    int flag = 0;
    COHORT_MPI_CHECK(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE));
    if (flag) finish();
    return done();
  }
  void finish() {
    completed();
    tensor_ = at::Tensor();
  }
  MPI_Request request_;
  at::Tensor tensor_;
};

// Completes a non-blocking operation without spinning (CommOptions::low_cpu_wait).
void wait_sleeping(MPI_Request* request) {
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    int flag = 0;
    COHORT_MPI_CHECK(MPI_Test(request, &flag, MPI_STATUS_IGNORE));
    if (flag) return;
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(1));
  }
}

// A blocking MPI collective, or (low_cpu) its non-blocking twin completed by wait_sleeping().
template <class Blocking, class Start>
void run_collective(bool low_cpu, Blocking&& blocking, Start&& start) {
  if (!low_cpu) {
    blocking();
    return;
  }
  MPI_Request request = MPI_REQUEST_NULL;
  start(&request);
  wait_sleeping(&request);
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm, CommOptions options,
                                 std::shared_ptr<Watchdog> watchdog)
    : Communicator(rank_of(comm), size_of(comm), options, std::move(watchdog)),
      comm_(comm),
      worker_(std::make_unique<Worker>()) {
  COHORT_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
}

MpiCommunicator::~MpiCommunicator() {
  worker_.reset();        // finishes queued operations first
  release_in_flight();    // its requests go before their communicator
  MPI_Comm_free(&comm_);  // return code ignored: destructors never throw
}

bool MpiCommunicator::device_ok(const at::Tensor& t) const { return t.device().is_cpu(); }

WorkPtr MpiCommunicator::run(const Call& call, std::function<void()> on_done) {
  if (call.kind == OpKind::kSend || call.kind == OpKind::kRecv)
    return post_p2p(call, std::move(on_done));
  auto task = [this, call] { execute(call); };
  if (call.blocking) return worker_->run_inline(task, on_done);
  return worker_->submit(std::move(task), std::move(on_done));
}

WorkPtr MpiCommunicator::post_p2p(const Call& call, std::function<void()> on_done) {
  MPI_Request request = MPI_REQUEST_NULL;
  if (call.kind == OpKind::kSend) {
    const at::Tensor& t = call.in;
    COHORT_MPI_CHECK(MPI_Isend(t.data_ptr(), count_of(t, "send"), mpi::datatype(t.scalar_type()),
                               call.peer, call.tag, comm_, &request));
  } else {
    const at::Tensor& t = call.out;
    COHORT_MPI_CHECK(MPI_Irecv(t.data_ptr(), count_of(t, "recv"), mpi::datatype(t.scalar_type()),
                               call.peer, call.tag, comm_, &request));
  }
  auto work =
      std::make_shared<RequestWork>(request, call.has_in ? call.in : call.out, std::move(on_done));
  keep_in_flight(work);  // the request's buffer lives until MPI is done with it
  return work;
}

void MpiCommunicator::execute(const Call& call) {
  if (options().debug_check) check_fingerprints(fingerprint(call));
  switch (call.kind) {
    case OpKind::kAllReduce: {
      const at::Tensor& t = call.out;
      const int n = count_of(t, "all_reduce");
      const MPI_Datatype type = mpi::datatype(t.scalar_type());
      const MPI_Op op = mpi::reduce_op(call.op, t.scalar_type());
      run_collective(
          options().low_cpu_wait,
          [&] { COHORT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, t.data_ptr(), n, type, op, comm_)); },
          [&](MPI_Request* r) {
            COHORT_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, t.data_ptr(), n, type, op, comm_, r));
          });
      if (call.op == ReduceOp::kAvg && size() > 1) t.div_(size());
      break;
    }
    case OpKind::kBroadcast: {
      const at::Tensor& t = call.out;
      const int n = count_of(t, "broadcast");
      const MPI_Datatype type = mpi::datatype(t.scalar_type());
      run_collective(
          options().low_cpu_wait,
          [&] { COHORT_MPI_CHECK(MPI_Bcast(t.data_ptr(), n, type, call.peer, comm_)); },
          [&](MPI_Request* r) {
            COHORT_MPI_CHECK(MPI_Ibcast(t.data_ptr(), n, type, call.peer, comm_, r));
          });
      break;
    }
    case OpKind::kAllGather: {
      const at::Tensor& in = call.in;
      const MPI_Datatype type = mpi::datatype(in.scalar_type());
      const int n = count_of(in, "all_gather");
      // In place: this rank's part of the output is the input already.
      const void* send = own_part(call.out, in, rank()) ? MPI_IN_PLACE : in.data_ptr();
      COHORT_MPI_CHECK(MPI_Allgather(send, n, type, call.out.data_ptr(), n, type, comm_));
      break;
    }
    case OpKind::kReduceScatter:
      reduce_scatter(call);
      break;
    case OpKind::kGather: {
      const at::Tensor& in = call.in;
      const MPI_Datatype type = mpi::datatype(in.scalar_type());
      const int n = count_of(in, "gather");
      void* out = call.has_out ? call.out.data_ptr() : nullptr;  // read by MPI at the root only
      run_collective(
          options().low_cpu_wait,
          [&] {
            COHORT_MPI_CHECK(MPI_Gather(in.data_ptr(), n, type, out, n, type, call.peer, comm_));
          },
          [&](MPI_Request* r) {
            COHORT_MPI_CHECK(
                MPI_Igather(in.data_ptr(), n, type, out, n, type, call.peer, comm_, r));
          });
      break;
    }
    case OpKind::kBarrier:
      run_collective(
          options().low_cpu_wait, [&] { COHORT_MPI_CHECK(MPI_Barrier(comm_)); },
          [&](MPI_Request* r) { COHORT_MPI_CHECK(MPI_Ibarrier(comm_, r)); });
      break;
    case OpKind::kSend:
    case OpKind::kRecv:
      break;  // posted by post_p2p
  }
}

// In place (the output is this rank's part of the input), MPI's MPI_IN_PLACE leaves the result
// at the start of the buffer: it is moved to the rank's part, a copy of 1/size of the bytes.
void MpiCommunicator::reduce_scatter(const Call& call) {
  const at::Tensor& out = call.out;
  const int n = count_of(out, "reduce_scatter");
  const MPI_Datatype type = mpi::datatype(out.scalar_type());
  const MPI_Op op = mpi::reduce_op(call.op, out.scalar_type());
  if (own_part(call.in, out, rank())) {
    COHORT_MPI_CHECK(
        MPI_Reduce_scatter_block(MPI_IN_PLACE, call.in.data_ptr(), n, type, op, comm_));
    if (rank() != 0) out.copy_(call.in.narrow(0, 0, n));  // disjoint: the part is not the start
  } else {
    COHORT_MPI_CHECK(
        MPI_Reduce_scatter_block(call.in.data_ptr(), out.data_ptr(), n, type, op, comm_));
  }
  if (call.op == ReduceOp::kAvg && size() > 1) out.div_(size());
}

std::vector<std::int64_t> MpiCommunicator::gather_fingerprints(
    const std::array<std::int64_t, 4>& mine) {
  std::vector<std::int64_t> all(4 * static_cast<size_t>(size()));
  COHORT_MPI_CHECK(MPI_Allgather(mine.data(), 4, MPI_INT64_T, all.data(), 4, MPI_INT64_T, comm_));
  return all;
}

std::unique_ptr<Communicator> MpiCommunicator::make_split(int color, int key) {
  MPI_Comm sub = MPI_COMM_NULL;
  COHORT_MPI_CHECK(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub));
  if (sub == MPI_COMM_NULL) return nullptr;
  return std::make_unique<MpiCommunicator>(sub, options(), watchdog());
}

}  // namespace cohort::comm
