// The NCCL backend: CUDA tensors, one ncclComm_t per communicator, on its own CUDA stream.
//
// Ordering with LibTorch: Debian's LibTorch has no CUDA, so Cohort cannot ask torch for its
// current stream; it orders against the legacy default stream, which is torch's default. Each
// operation waits for the work already queued on the default stream (an event), runs on our
// stream, and its Work makes the default stream wait for it in wait(). The unique id travels
// over MPI from rank 0.
#include <mpi.h>

#include <ATen/core/Tensor.h>

#include <mutex>
#include <vector>

#include "../completion_work.hpp"
#include "../mpi/mpi_check.hpp"
#include "../mpi/mpi_session_impl.hpp"
#include "cuda_handles.hpp"
#include "nccl_check.hpp"
#include "nccl_factory.hpp"

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
      COHORT_THROW(CommError, "the NCCL backend does not carry dtype ", type);
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

// Completion of one operation: an event recorded on our stream after it. test(), wait() and the
// watchdog's poll() take turns (cudaEventQuery itself is thread-safe; completed() is not).
class EventWork final : public CompletionWork {
 public:
  EventWork(CudaEvent event, std::function<void()> on_done)
      : CompletionWork(std::move(on_done)), event_(std::move(event)) {}
  bool test() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return test_locked();
  }
  void wait() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done()) return;
    COHORT_CUDA_CHECK(cudaEventSynchronize(event_.get()));
    COHORT_CUDA_CHECK(cudaStreamWaitEvent(cudaStreamLegacy, event_.get(), 0));
    completed();
  }
  bool poll() override {
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    return lock.owns_lock() && test_locked();
  }

 private:
  bool test_locked() {
    if (!done() && cudaEventQuery(event_.get()) == cudaSuccess) completed();
    return done();
  }
  std::mutex mutex_;
  CudaEvent event_;
};

class NcclCommunicator final : public Communicator {
 public:
  // Takes `comm`; the members release the stream, the communicator and the barrier's buffer in
  // reverse order on every path (the stream is synchronised before the communicator goes).
  NcclCommunicator(NcclComm comm, int rank, int size, CommOptions options,
                   std::shared_ptr<Watchdog> watchdog)
      : Communicator(rank, size, options, std::move(watchdog)), comm_(std::move(comm)) {
    COHORT_CUDA_CHECK(cudaGetDevice(&device_));
    stream_ = make_stream();
  }
  Backend backend() const override { return Backend::kNccl; }

 protected:
  WorkPtr run(const Call& call, std::function<void()> on_done) override {
    const CudaEvent ready = make_event();
    COHORT_CUDA_CHECK(cudaEventRecord(ready.get(), cudaStreamLegacy));
    COHORT_CUDA_CHECK(cudaStreamWaitEvent(stream_.get(), ready.get(), 0));
    if (options().debug_check) check_fingerprints(fingerprint(call));
    launch(call);
    CudaEvent done = make_event();
    COHORT_CUDA_CHECK(cudaEventRecord(done.get(), stream_.get()));
    auto work = std::make_shared<EventWork>(std::move(done), std::move(on_done));
    if (call.blocking) work->wait();
    return work;
  }
  void drain() override { COHORT_CUDA_CHECK(cudaStreamSynchronize(stream_.get())); }
  bool device_ok(const at::Tensor& t) const override {
    return t.device().is_cuda() && t.device().index() == device_;
  }
  const char* device_name() const override { return "CUDA (this rank's device)"; }

  std::unique_ptr<Communicator> make_split(int color, int key) override {
    ncclComm_t raw = nullptr;
    COHORT_NCCL_CHECK(
        ncclCommSplit(comm_.get(), color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &raw, nullptr));
    NcclComm sub(raw);  // released if a check below throws
    if (color < 0) return nullptr;
    int rank = 0, size = 0;
    COHORT_NCCL_CHECK(ncclCommUserRank(sub.get(), &rank));
    COHORT_NCCL_CHECK(ncclCommCount(sub.get(), &size));
    return std::make_unique<NcclCommunicator>(std::move(sub), rank, size, options(), watchdog());
  }

  std::vector<std::int64_t> gather_fingerprints(const std::array<std::int64_t, 4>& mine) override {
    std::vector<std::int64_t> all(4 * static_cast<size_t>(size()));
    const DeviceBuffer buffer = make_device_buffer(all.size() * sizeof(std::int64_t));
    auto* device = static_cast<std::int64_t*>(buffer.get());
    COHORT_CUDA_CHECK(cudaMemcpyAsync(device + 4 * rank(), mine.data(), 4 * sizeof(std::int64_t),
                                      cudaMemcpyHostToDevice, stream_.get()));
    COHORT_NCCL_CHECK(
        ncclAllGather(device + 4 * rank(), device, 4, ncclInt64, comm_.get(), stream_.get()));
    COHORT_CUDA_CHECK(cudaMemcpyAsync(all.data(), device, all.size() * sizeof(std::int64_t),
                                      cudaMemcpyDeviceToHost, stream_.get()));
    COHORT_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    return all;
  }

 private:
  void launch(const Call& call) {
    switch (call.kind) {
      case OpKind::kAllReduce: {
        const at::Tensor& t = call.out;
        COHORT_NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(),
                                        nccl_type(t.scalar_type()), nccl_op(call.op), comm_.get(),
                                        stream_.get()));
        break;
      }
      case OpKind::kBroadcast: {
        const at::Tensor& t = call.out;
        COHORT_NCCL_CHECK(ncclBroadcast(t.data_ptr(), t.data_ptr(), t.numel(),
                                        nccl_type(t.scalar_type()), call.peer, comm_.get(),
                                        stream_.get()));
        break;
      }
      case OpKind::kAllGather:
        COHORT_NCCL_CHECK(ncclAllGather(call.in.data_ptr(), call.out.data_ptr(), call.in.numel(),
                                        nccl_type(call.in.scalar_type()), comm_.get(),
                                        stream_.get()));
        break;
      case OpKind::kReduceScatter:
        COHORT_NCCL_CHECK(ncclReduceScatter(call.in.data_ptr(), call.out.data_ptr(),
                                            call.out.numel(), nccl_type(call.out.scalar_type()),
                                            nccl_op(call.op), comm_.get(), stream_.get()));
        break;
      case OpKind::kSend:  // NCCL has no tags: p2p transfers between two ranks match in order
        COHORT_NCCL_CHECK(ncclSend(call.in.data_ptr(), call.in.numel(),
                                   nccl_type(call.in.scalar_type()), call.peer, comm_.get(),
                                   stream_.get()));
        break;
      case OpKind::kRecv:
        COHORT_NCCL_CHECK(ncclRecv(call.out.data_ptr(), call.out.numel(),
                                   nccl_type(call.out.scalar_type()), call.peer, comm_.get(),
                                   stream_.get()));
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
  void gather_on_stream(const Call& call) {
    const auto type = nccl_type(call.in.scalar_type());
    const std::size_t n = call.in.numel();
    if (rank() != call.peer) {
      COHORT_NCCL_CHECK(
          ncclSend(call.in.data_ptr(), n, type, call.peer, comm_.get(), stream_.get()));
      return;
    }
    char* out = static_cast<char*>(call.out.data_ptr());
    const std::size_t bytes = call.in.nbytes();
    COHORT_CUDA_CHECK(cudaMemcpyAsync(out + rank() * bytes, call.in.data_ptr(), bytes,
                                      cudaMemcpyDeviceToDevice, stream_.get()));
    COHORT_NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < size(); ++r) {
      if (r != rank())
        COHORT_NCCL_CHECK(ncclRecv(out + r * bytes, n, type, r, comm_.get(), stream_.get()));
    }
    COHORT_NCCL_CHECK(ncclGroupEnd());
  }

  void barrier_on_stream() {
    if (barrier_buffer_.get() == nullptr) barrier_buffer_ = make_device_buffer(sizeof(float));
    COHORT_NCCL_CHECK(ncclAllReduce(barrier_buffer_.get(), barrier_buffer_.get(), 1, ncclFloat32,
                                    ncclSum, comm_.get(), stream_.get()));
  }

  // Declared so that they go in this order: the buffer, the stream (synchronised), the comm.
  NcclComm comm_;
  CudaStream stream_;
  int device_ = 0;
  DeviceBuffer barrier_buffer_;
};

}  // namespace

bool compiled() { return true; }

std::unique_ptr<Communicator> make_communicator(const MpiSession& session, CommOptions options,
                                                std::shared_ptr<Watchdog> watchdog) {
  const auto& impl = session_impl(session);
  int devices = 0;
  COHORT_CHECK(cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0, ConfigError,
               "the NCCL backend needs a CUDA device, and this rank sees none");
  ncclUniqueId id{};
  if (impl.rank == 0) COHORT_NCCL_CHECK(ncclGetUniqueId(&id));
  COHORT_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, impl.world));
  ncclComm_t raw = nullptr;
  COHORT_NCCL_CHECK(ncclCommInitRank(&raw, impl.size, id, impl.rank));
  NcclComm comm(raw);  // released if the communicator's constructor throws
  return std::make_unique<NcclCommunicator>(std::move(comm), impl.rank, impl.size, options,
                                            std::move(watchdog));
}

}  // namespace cohort::comm::nccl
