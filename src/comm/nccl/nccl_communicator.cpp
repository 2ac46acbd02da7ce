// The NCCL backend: CUDA tensors on the rank's device (comm::set_rank_device, made current before
// the communicator is), one ncclComm_t per communicator, on its own CUDA stream.
//
// Ordering with LibTorch: Cohort cannot ask torch for its current stream (its modules build
// against Debian's CPU LibTorch too); it orders against the legacy default stream, torch's
// default. Each operation waits for the work already queued there (an event), runs on our
// stream, and its Work makes the default stream wait for it in wait(). The unique id travels
// over MPI from rank 0.
//
// NCCL's rules kept here: every operation of a communicator runs in issue order on one stream,
// so point-to-point transfers that must progress together are issued as one group
// (p2p_group_async); a Work holds its tensors, and the communicator holds the Work, until the
// operation's event has passed; NCCL's asynchronous errors are polled while waiting; a failing
// rank aborts its communicators instead of waiting for peers in its cleanup (nccl_state.hpp).
#include <mpi.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "../completion_work.hpp"
#include "../mpi/mpi_check.hpp"
#include "../mpi/mpi_session_impl.hpp"
#include "cohort/comm/device.hpp"
#include "cuda_handles.hpp"
#include "nccl_check.hpp"
#include "nccl_factory.hpp"
#include "nccl_state.hpp"

namespace cohort::comm::nccl {
namespace {

ncclDataType_t nccl_type(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float:
      return ncclFloat32;
    case c10::ScalarType::Double:
      return ncclFloat64;
    case c10::ScalarType::Half:
      return ncclFloat16;
    case c10::ScalarType::BFloat16:
      return ncclBfloat16;
    case c10::ScalarType::Long:
      return ncclInt64;
    case c10::ScalarType::Int:
      return ncclInt32;
    case c10::ScalarType::Byte:
      return ncclUint8;
    case c10::ScalarType::Char:
      return ncclInt8;
    default:
      // Cohort's own call: a programming error (exit 1), never requeued.
      throw CommError(::cohort::detail::concat("the NCCL backend does not carry dtype ", type),
                      ExitCode::kInternal);
  }
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAvg:
      return ncclAvg;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
  }
  return ncclSum;
}

// Completion of one operation (or of a group: each of its Works shares the event): an event
// recorded on the communicator's stream after it. The Work holds the operation's tensors until
// the event has passed (the caching allocator must not hand their memory out while NCCL reads or
// writes it), and its communicator's state (a Work may outlive the communicator). wait() polls
// the event and NCCL's asynchronous error in turn, so that a peer lost mid-operation ends in an
// error instead of a wait forever. test(), wait() and the watchdog's poll() take turns.
class EventWork final : public PolledWork {
 public:
  EventWork(NcclStatePtr state, std::shared_ptr<CudaEvent> event, std::vector<at::Tensor> tensors,
            std::function<void()> on_done)
      : PolledWork(std::move(on_done)),
        state_(std::move(state)),
        event_(std::move(event)),
        tensors_(std::move(tensors)) {}
  bool test() override {
    std::lock_guard<std::mutex> lock(mutex());
    if (test_locked()) return true;
    state_->check_async_error();
    return false;
  }
  void wait() override {
    std::lock_guard<std::mutex> lock(mutex());
    if (!test_locked()) {
      state_->wait_for(event_->get());
      test_locked();
    }
    // What runs next on torch's stream (the legacy default stream) follows the operation.
    COHORT_CUDA_CHECK(cudaStreamWaitEvent(cudaStreamLegacy, event_->get(), 0));
  }

 private:
  bool test_locked() override {
    if (done()) return true;
    const cudaError_t rc = cudaEventQuery(event_->get());
    if (rc == cudaErrorNotReady) return false;
    if (rc != cudaSuccess) {
      state_->mark_failed();
      throw_cuda("cudaEventQuery", rc);
    }
    tensors_.clear();
    completed();
    return true;
  }
  NcclStatePtr state_;
  std::shared_ptr<CudaEvent> event_;
  std::vector<at::Tensor> tensors_;
};

std::vector<at::Tensor> tensors_of(const Communicator::Call& call) {
  std::vector<at::Tensor> tensors;
  if (call.has_out) tensors.push_back(call.out);
  if (call.has_in) tensors.push_back(call.in);
  return tensors;
}

bool is_collective(Communicator::OpKind kind) {
  return kind != Communicator::OpKind::kSend && kind != Communicator::OpKind::kRecv;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(NcclStatePtr state, int rank, int size, CommOptions options,
                   std::shared_ptr<Watchdog> watchdog)
      : Communicator(rank, size, options, std::move(watchdog)), state_(std::move(state)) {}
  ~NcclCommunicator() override {
    // A rank that unwinds an error must not wait for its peers on the way out (nccl_state.hpp).
    if (std::uncaught_exceptions() > 0) state_->mark_failed();
    // Normally what is queued finishes before its tensors go back to the caching allocator; a
    // failing rank leaves them (it exits, and its stream may never finish).
    if (!state_->failed()) cudaStreamSynchronize(state_->stream());
    release_in_flight();
  }
  Backend backend() const override { return Backend::kNccl; }

 protected:
  WorkPtr run(const Call& call, std::function<void()> on_done) override {
    if (options().debug_check && is_collective(call.kind)) check_fingerprints(fingerprint(call));
    follow_torch_stream();
    guarded([&] { launch(call); });
    auto work = finish({call}, {std::move(on_done)}).front();
    if (call.blocking) work->wait();
    return work;
  }
  std::vector<WorkPtr> run_group(const std::vector<Call>& calls,
                                 std::vector<std::function<void()>> on_done) override {
    follow_torch_stream();
    guarded([&] {
      COHORT_NCCL_CHECK(ncclGroupStart());
      try {
        for (const Call& call : calls) launch(call);
      } catch (...) {
        ncclGroupEnd();  // the group is closed on every path; the first error is the one told
        throw;
      }
      COHORT_NCCL_CHECK(ncclGroupEnd());
    });
    return finish(calls, std::move(on_done));
  }
  // Waits for the stream polling NCCL's asynchronous error, as a Work's wait() does: a peer
  // lost mid-operation is an error here, not a wait until the watchdog.
  void drain() override {
    guarded([&] {
      const CudaEvent done = make_event();
      COHORT_CUDA_CHECK(cudaEventRecord(done.get(), state_->stream()));
      state_->wait_for(done.get());
    });
  }
  bool device_ok(const at::Tensor& t) const override {
    return t.device().is_cuda() && t.device().index() == state_->device();
  }
  const char* device_name() const override { return "CUDA (this rank's device)"; }

  std::unique_ptr<Communicator> make_split(int color, int key) override {
    ncclComm_t raw = nullptr;
    guarded([&] {
      COHORT_NCCL_CHECK(ncclCommSplit(state_->comm(), color < 0 ? NCCL_SPLIT_NOCOLOR : color, key,
                                      &raw, nullptr));
    });
    if (color < 0) return nullptr;
    auto sub = std::make_shared<NcclState>(raw, state_->device());
    int rank = 0, size = 0;
    COHORT_NCCL_CHECK(ncclCommUserRank(sub->comm(), &rank));
    COHORT_NCCL_CHECK(ncclCommCount(sub->comm(), &size));
    return std::make_unique<NcclCommunicator>(std::move(sub), rank, size, options(), watchdog());
  }

  std::vector<std::int64_t> gather_fingerprints(const std::array<std::int64_t, 4>& mine) override;

 private:
  // Runs `body`; an NCCL or CUDA error there marks the communicator failed (its release aborts).
  template <class Body>
  void guarded(Body&& body) {
    try {
      body();
    } catch (...) {
      state_->mark_failed();
      throw;
    }
  }
  // The operation starts after what torch already queued on its (legacy default) stream.
  void follow_torch_stream() {
    const CudaEvent ready = make_event();
    COHORT_CUDA_CHECK(cudaEventRecord(ready.get(), cudaStreamLegacy));
    COHORT_CUDA_CHECK(cudaStreamWaitEvent(state_->stream(), ready.get(), 0));
  }
  // One event after the launched calls; one Work per call, each holding its call's tensors.
  std::vector<WorkPtr> finish(const std::vector<Call>& calls,
                              std::vector<std::function<void()>> on_done) {
    auto done = std::make_shared<CudaEvent>(make_event());
    COHORT_CUDA_CHECK(cudaEventRecord(done->get(), state_->stream()));
    std::vector<WorkPtr> works;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      auto work =
          std::make_shared<EventWork>(state_, done, tensors_of(calls[i]), std::move(on_done[i]));
      keep_in_flight(work);
      works.push_back(std::move(work));
    }
    return works;
  }
  void launch(const Call& call);
  void gather_on_stream(const Call& call);
  void barrier_on_stream();

  NcclStatePtr state_;
  // From torch's caching allocator, not cudaMalloc: cudaFree synchronises the device, which on a
  // failing rank would wait for the peers of an operation still queued.
  at::Tensor barrier_buffer_;
};

std::vector<std::int64_t> NcclCommunicator::gather_fingerprints(
    const std::array<std::int64_t, 4>& mine) {
  std::vector<std::int64_t> all(4 * static_cast<size_t>(size()));
  const at::Tensor buffer = at::empty(
      {static_cast<std::int64_t>(all.size())},
      at::TensorOptions().dtype(at::kLong).device(c10::Device(c10::kCUDA, state_->device())));
  auto* device = buffer.data_ptr<std::int64_t>();
  const cudaStream_t stream = state_->stream();
  follow_torch_stream();  // the buffer was made on torch's stream
  guarded([&] {
    COHORT_CUDA_CHECK(cudaMemcpyAsync(device + 4 * rank(), mine.data(), 4 * sizeof(std::int64_t),
                                      cudaMemcpyHostToDevice, stream));
    COHORT_NCCL_CHECK(
        ncclAllGather(device + 4 * rank(), device, 4, ncclInt64, state_->comm(), stream));
    COHORT_CUDA_CHECK(cudaMemcpyAsync(all.data(), device, all.size() * sizeof(std::int64_t),
                                      cudaMemcpyDeviceToHost, stream));
    const CudaEvent done = make_event();
    COHORT_CUDA_CHECK(cudaEventRecord(done.get(), stream));
    state_->wait_for(done.get());
  });
  return all;
}

void NcclCommunicator::launch(const Call& call) {
  const ncclComm_t comm = state_->comm();
  const cudaStream_t stream = state_->stream();
  switch (call.kind) {
    case OpKind::kAllReduce: {
      const at::Tensor& t = call.out;
      COHORT_NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(),
                                      nccl_type(t.scalar_type()), nccl_op(call.op), comm, stream));
      break;
    }
    case OpKind::kBroadcast: {
      const at::Tensor& t = call.out;
      COHORT_NCCL_CHECK(ncclBroadcast(t.data_ptr(), t.data_ptr(), t.numel(),
                                      nccl_type(t.scalar_type()), call.peer, comm, stream));
      break;
    }
    case OpKind::kAllGather:
      COHORT_NCCL_CHECK(ncclAllGather(call.in.data_ptr(), call.out.data_ptr(), call.in.numel(),
                                      nccl_type(call.in.scalar_type()), comm, stream));
      break;
    case OpKind::kReduceScatter:
      COHORT_NCCL_CHECK(ncclReduceScatter(call.in.data_ptr(), call.out.data_ptr(), call.out.numel(),
                                          nccl_type(call.out.scalar_type()), nccl_op(call.op), comm,
                                          stream));
      break;
    case OpKind::kSend:  // NCCL has no tags: p2p transfers between two ranks match in order
      COHORT_NCCL_CHECK(ncclSend(call.in.data_ptr(), call.in.numel(),
                                 nccl_type(call.in.scalar_type()), call.peer, comm, stream));
      break;
    case OpKind::kRecv:
      COHORT_NCCL_CHECK(ncclRecv(call.out.data_ptr(), call.out.numel(),
                                 nccl_type(call.out.scalar_type()), call.peer, comm, stream));
      break;
    case OpKind::kBarrier:
      barrier_on_stream();
      break;
    case OpKind::kGather:
      gather_on_stream(call);
      break;
  }
}

// NCCL has no gather: the root receives from every rank in one group, as c10d's does.
void NcclCommunicator::gather_on_stream(const Call& call) {
  const ncclComm_t comm = state_->comm();
  const cudaStream_t stream = state_->stream();
  const auto type = nccl_type(call.in.scalar_type());
  const std::size_t n = call.in.numel();
  if (rank() != call.peer) {
    COHORT_NCCL_CHECK(ncclSend(call.in.data_ptr(), n, type, call.peer, comm, stream));
    return;
  }
  char* out = static_cast<char*>(call.out.data_ptr());
  const std::size_t bytes = call.in.nbytes();
  COHORT_CUDA_CHECK(cudaMemcpyAsync(out + rank() * bytes, call.in.data_ptr(), bytes,
                                    cudaMemcpyDeviceToDevice, stream));
  COHORT_NCCL_CHECK(ncclGroupStart());
  try {
    for (int r = 0; r < size(); ++r) {
      if (r != rank()) COHORT_NCCL_CHECK(ncclRecv(out + r * bytes, n, type, r, comm, stream));
    }
  } catch (...) {
    ncclGroupEnd();  // closed on every path: an open group would defer this thread's NCCL calls
    throw;
  }
  COHORT_NCCL_CHECK(ncclGroupEnd());
}

void NcclCommunicator::barrier_on_stream() {
  if (!barrier_buffer_.defined()) {
    barrier_buffer_ = at::zeros(
        {1},
        at::TensorOptions().dtype(at::kFloat).device(c10::Device(c10::kCUDA, state_->device())));
  }
  COHORT_NCCL_CHECK(ncclAllReduce(barrier_buffer_.data_ptr(), barrier_buffer_.data_ptr(), 1,
                                  ncclFloat32, ncclSum, state_->comm(), state_->stream()));
}

// NCCL's start failed on this rank. The ranks that found the fault leave; the others may wait
// inside NCCL's start for them (a GPU two ranks share is seen by those two alone), where neither
// the watchdog nor a timeout reaches, and this rank's MPI_Finalize would wait for them in turn.
// So the job ends here, with this rank's one line and its fault class's exit code. A node fault
// goes on as a DeviceError instead: `cohort train` files it for the supervisor (which excludes
// the node) and ends the job itself.
[[noreturn]] void end_job_at_failed_start(const MpiSession& session, ncclResult_t rc) {
  try {
    throw_nccl("ncclCommInitRank", rc);
  } catch (const DeviceError&) {  // the node's fault (its class decided in throw_nccl)
    throw;
  } catch (const Error& e) {  // said on stderr as main says an error, then every rank ends
    std::fprintf(stderr, "cohort: error: rank %d: %s\n", session.rank(), e.what());
    session.abort(static_cast<int>(e.exit_code()));
  }
}

}  // namespace

bool compiled() { return true; }

std::unique_ptr<Communicator> make_communicator(const MpiSession& session, CommOptions options,
                                                std::shared_ptr<Watchdog> watchdog) {
  const auto& impl = session_impl(session);
  const std::optional<int> device = rank_device();
  COHORT_CHECK(device.has_value(), ConfigError,
               "the NCCL backend needs the rank's GPU: no CUDA device was chosen for rank ",
               impl.rank, " (none visible to it; see `cohort env`)");
  set_current_device(*device);  // the communicator is made, and lives, on the rank's device
  ncclUniqueId id{};
  if (impl.rank == 0) COHORT_NCCL_CHECK(ncclGetUniqueId(&id));
  COHORT_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, impl.world));
  ncclComm_t raw = nullptr;
  const ncclResult_t rc = ncclCommInitRank(&raw, impl.size, id, impl.rank);
  if (rc != ncclSuccess) end_job_at_failed_start(session, rc);
  auto state = std::make_shared<NcclState>(raw, *device);  // aborts `raw` if it throws
  return std::make_unique<NcclCommunicator>(std::move(state), impl.rank, impl.size, options,
                                            std::move(watchdog));
}

}  // namespace cohort::comm::nccl
