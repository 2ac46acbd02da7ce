// The NCCL backend. On a machine without a GPU (or a build without NCCL) asking for it gives a
// clear ConfigError, never a crash (refused_without_the_rank_device, CTest's
// mpi.comm.nccl.refusal, runs everywhere). Every other case needs the NCCL communicator: where
// it cannot be made on every rank (no NCCL or CUDA in the build, no GPU, ranks that would share
// one) every rank skips them alike, each case says "SKIPPED <what>: <why>" in the log, and the
// job exits 79, which CTest reports as Skipped (tests/test_skip.hpp, tests/mpi/test_main.cpp;
// scripts/gpu-check reads those lines too). On a GPU machine, with the rank's device chosen the
// way the trainer chooses it (env::bind_gpu, comm::set_rank_device):
//  - the device is current on this thread and on a thread that makes the rank's device current;
//  - every collective (all_reduce, all_gather in and out of place, reduce_scatter, broadcast,
//    gather, barrier), blocking and asynchronous, for fp32, bf16, fp16 and int64 and sum, avg,
//    max, min, gives what the MPI backend gives on the CPU for the same inputs (exactly; avg to
//    1e-2, as NCCL multiplies by 1/n before it adds where MPI divides after);
//  - p2p_group_async: a ring exchange equal to MPI's (two ranks or more); one rank: the refusal
//    of a transfer to itself, on both backends alike, and an empty group;
//  - an asynchronous operation keeps the tensors it was given: the caller drops them (and its
//    Work) right after issuing, while the GPU is still busy with earlier work, and the caching
//    allocator does not hand their memory out before the operation is done (the control: a
//    dropped tensor of the same size that no operation holds IS handed out again at once).
// NCCL refuses two ranks on one GPU (env::require_own_gpu refuses a shared one first), so
// mpi.comm.nccl, two ranks, needs two GPUs: there every rank adds a different input, so a sum
// differs from each rank's own input (checked, as a control) and an all-reduce that did nothing
// fails. With fewer GPUs it skips. The lent single-GPU machine runs the suite as one rank
// (scripts/gpu-check): the dtype, size and stream handling and the keep-alive are checked there,
// the reduction across ranks is not (a sum over one rank equals its input whatever the call did).
#include <ATen/ATen.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <torch/cuda.h>

#include "cohort/comm/device.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/env/gpu_binding.hpp"
#include "cohort/error.hpp"
#include "mpi_fixture.hpp"
#include "test_skip.hpp"

using cohort::comm::Backend;
using cohort::comm::Communicator;
using cohort::comm::ReduceOp;

namespace {

// The NCCL communicator over the session's ranks on the rank's own GPU, made once; or why not.
struct NcclWorld {
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<Communicator> mpi;  // the CPU reference, same ranks
  std::optional<int> device;
  std::string skipped;  // why every rank skips; empty when comm is there
  std::string failed;   // why the ranks could not make it where they should have
};

cohort::comm::CommOptions options() {
  cohort::comm::CommOptions o;
  o.timeout = std::chrono::seconds(120);
  return o;
}

// As the trainer does (train::start_rank_device): the launcher's binding, one GPU per rank, made
// current before the communicator. Making the NCCL communicator is a collective: every rank first
// says whether it can (an all-reduce over MPI), and either all make it or none does, so that one
// rank's missing GPU is every rank's skip, never a rank left waiting in NCCL's set-up. Only what
// is counted is a skip (no NCCL or CUDA in the build, fewer GPUs than the node's ranks: NCCL
// refuses two ranks on one GPU); a binding that fails where the GPUs are there is a failure.
NcclWorld open_world() {
  NcclWorld w;
  const auto& session = cohort::test::session();
  w.mpi = cohort::comm::make_communicator(session, Backend::kMpi, options());
  if (!cohort::comm::backend_compiled(Backend::kNccl)) {
    w.skipped = "this build has no NCCL backend (COHORT_WITH_NCCL, docs/building.md)";
  } else if (!at::hasCUDA()) {
    w.skipped = "this LibTorch has no CUDA (build against a CUDA LibTorch)";
  } else {
    const int cuda_devices = static_cast<int>(torch::cuda::device_count());
    if (cuda_devices < session.node_size()) {
      w.skipped = "LibTorch sees " + std::to_string(cuda_devices) + " CUDA device(s) for " +
                  std::to_string(session.node_size()) +
                  " rank(s) on this node (NCCL needs a GPU of its own for each)";
    } else {
      try {
        const auto binding =
            cohort::env::bind_gpu(cohort::env::Environment::from_process(), session.node_rank(),
                                  session.node_size(), cuda_devices);
        w.device = cohort::env::require_own_gpu(binding, "the NCCL test");
      } catch (const cohort::Error& e) {
        w.failed = std::string("binding this rank's GPU: ") + e.what();
      }
    }
  }
  // [0]: some rank failed; [1]: some rank skips.
  at::Tensor state = at::zeros({2}, at::kLong);
  state[0] = w.failed.empty() ? 0 : 1;
  state[1] = w.skipped.empty() ? 0 : 1;
  w.mpi->all_reduce(state, {ReduceOp::kMax});
  if (state[0].item<std::int64_t>() != 0) {
    if (w.failed.empty()) w.failed = "another rank could not bind its GPU (its log says why)";
    w.device.reset();
    return w;
  }
  if (state[1].item<std::int64_t>() != 0) {
    if (w.skipped.empty()) w.skipped = "another rank cannot use NCCL (its log says why)";
    w.device.reset();
    return w;
  }
  // From here on every rank has its GPU: what goes wrong is a failure, not a skip.
  cohort::comm::set_rank_device(w.device);
  w.comm = cohort::comm::make_communicator(session, Backend::kNccl, options());
  return w;
}

// Made by the suite's first case that asks, released when the suite ends: before main finalizes
// MPI (tests/mpi/test_main.cpp; a communicator freed after MPI_Finalize aborts the process).
std::unique_ptr<NcclWorld> g_world;

NcclWorld& world() {
  if (!g_world) g_world = std::make_unique<NcclWorld>(open_world());
  return *g_world;
}

struct ReleaseWorld {
  ~ReleaseWorld() { g_world.reset(); }
};

// The NCCL communicator, or nullptr after the skip (the log's "SKIPPED <what>: <why>", exit 79).
Communicator* nccl_or_skip(const char* what) {
  NcclWorld& w = world();
  if (!w.failed.empty()) BOOST_FAIL(what << ": " << w.failed);
  if (!w.comm) cohort::test::skip(what, w.skipped);
  return w.comm.get();
}

at::TensorOptions on_gpu(at::ScalarType type) {
  return at::TensorOptions().dtype(type).device(
      c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(*world().device)));
}

// Rank r's input: small integers in [-8, 8], exact in every dtype (bf16 and fp16 included), that
// differ by rank and position (as tests/mpi/comm/test_collectives.cpp).
at::Tensor input(int rank, std::int64_t n, at::ScalarType type) {
  return (at::arange(n, at::kLong).remainder(7) - 3 + rank * 2 - 2).to(type);
}

bool same(const at::Tensor& gpu, const at::Tensor& cpu) {
  const at::Tensor a = gpu.cpu().to(at::kDouble), b = cpu.to(at::kDouble);
  return a.sizes() == b.sizes() && at::equal(a, b);
}

const std::vector<at::ScalarType> kTypes = {at::kFloat, at::kBFloat16, at::kHalf, at::kLong};
// Empty, one, odd and 4 MiB of float32.
const std::vector<std::int64_t> kSizes = {0, 1, 1001, 1 << 20};

std::string label(const char* op, at::ScalarType type, std::int64_t n, const char* extra = "") {
  return std::string(op) + " " + c10::toString(type) + " n=" + std::to_string(n) + extra;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(comm_nccl, *boost::unit_test::fixture<ReleaseWorld>())

// First: before any rank device is chosen the NCCL factory refuses (a ConfigError in one line),
// whatever the build; an ordinal the process does not see is refused naming the devices it sees.
BOOST_AUTO_TEST_CASE(refused_without_the_rank_device) {
  BOOST_TEST((cohort::comm::backend_for(c10::Device(c10::kCUDA, 0)) == Backend::kNccl));
  BOOST_TEST((cohort::comm::backend_for(c10::Device(c10::kCPU)) == Backend::kMpi));
  BOOST_REQUIRE(!cohort::comm::rank_device().has_value());
  try {
    cohort::comm::make_communicator(cohort::test::session(), Backend::kNccl, options());
    BOOST_ERROR("the NCCL factory made a communicator with no rank device chosen");
  } catch (const cohort::ConfigError& e) {
    const std::string why = e.what();
    BOOST_TEST_MESSAGE("refused as it should: " << why);
    const bool compiled = cohort::comm::backend_compiled(Backend::kNccl);
    BOOST_TEST(why.find(compiled ? "no CUDA device was chosen" : "not compiled") !=
               std::string::npos);
  }
  if (!cohort::comm::cuda_compiled()) {
    // Not a skip: without CUDA there is no ordinal to choose, and the refusal above is the claim.
    BOOST_TEST_MESSAGE("the unseen-ordinal refusal does not apply: this build has no CUDA");
    return;
  }
  const int seen = static_cast<int>(torch::cuda::device_count());
  try {
    cohort::comm::set_rank_device(seen);  // one past the last device this process sees
    BOOST_ERROR("set_rank_device(" << seen << ") passed with " << seen << " devices visible");
  } catch (const cohort::ConfigError& e) {
    const std::string why = e.what();
    BOOST_TEST(why.find("CUDA_VISIBLE_DEVICES") != std::string::npos, why);
  }
  BOOST_TEST(!cohort::comm::rank_device().has_value());  // a refused choice is not recorded
}

// The binding's device is current here and on a new thread once it makes the rank's device
// current (what every thread Cohort starts does first). With one GPU the ordinal is 0, CUDA's
// default too: there this shows the protocol runs, not that it moves a thread off device 0.
BOOST_AUTO_TEST_CASE(rank_device_current_on_every_thread) {
  if (!nccl_or_skip("the rank device check")) return;
  const int device = *world().device;
  BOOST_TEST(cohort::comm::rank_device().value_or(-1) == device);
  BOOST_TEST(cohort::comm::current_device().value_or(-1) == device);
  std::optional<int> seen;
  std::thread([&] {
    cohort::comm::make_rank_device_current();
    seen = cohort::comm::current_device();
  }).join();
  BOOST_TEST(seen.value_or(-1) == device);
  BOOST_TEST_MESSAGE("rank device cuda:" << device << " of " << torch::cuda::device_count()
                                         << " visible, current on the main and a new thread");
}

// Two ranks or more: each adds a different input, and the control below shows that the expected
// sum is none of them, so an all-reduce that left the tensor as it was fails. One rank (the lent
// single-GPU machine) checks the dtypes, sizes and streams only, and says so.
BOOST_AUTO_TEST_CASE(all_reduce_equals_mpi) {
  Communicator* nccl = nccl_or_skip("the NCCL all-reduce against MPI");
  if (!nccl) return;
  Communicator& mpi = *world().mpi;
  int checked = 0, controls = 0;
  for (const auto type : kTypes) {
    for (const auto n : kSizes) {
      for (const auto op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
        if (op == ReduceOp::kAvg && !at::isFloatingType(type)) continue;
        at::Tensor cpu = input(mpi.rank(), n, type);
        at::Tensor gpu = cpu.to(on_gpu(type));
        mpi.all_reduce(cpu, {op});
        const bool async = (n & 1) != 0;  // odd sizes through the asynchronous form
        if (async) {
          nccl->all_reduce_async(gpu, {op})->wait();
        } else {
          nccl->all_reduce(gpu, {op});
        }
        const std::string name =
            label("all_reduce", type, n, async ? " async " : " ") + cohort::comm::to_string(op);
        // Two elements or more hold two residues, and there the sum over any number of ranks
        // differs from every rank's own input; a single element may not (5 ranks: rank 0's -5).
        if (mpi.size() > 1 && op == ReduceOp::kSum && n > 1) {
          BOOST_TEST(!same(cpu, input(mpi.rank(), n, type)),
                     "control: " << name << ": the sum equals this rank's own input, so an "
                                 << "all-reduce that did nothing would pass");
          ++controls;
        }
        if (op == ReduceOp::kAvg) {
          BOOST_TEST(at::allclose(gpu.cpu().to(at::kDouble), cpu.to(at::kDouble), 1e-2, 1e-2),
                     name);
        } else {
          BOOST_TEST(same(gpu, cpu), name);
        }
        ++checked;
      }
    }
  }
  BOOST_TEST_MESSAGE("NCCL all_reduce: "
                     << checked << " cases equal MPI's on the CPU, " << nccl->size() << " rank(s), "
                     << controls << " sums unlike this rank's input"
                     << (nccl->size() == 1 ? " (one rank: the reduction across ranks is "
                                             "not checked; mpi.comm.nccl runs two GPUs)"
                                           : ""));
}

BOOST_AUTO_TEST_CASE(gather_scatter_broadcast_barrier_equal_mpi) {
  Communicator* nccl = nccl_or_skip("the NCCL collectives against MPI");
  if (!nccl) return;
  Communicator& mpi = *world().mpi;
  const int size = mpi.size(), rank = mpi.rank();
  int checked = 0;
  for (const auto type : kTypes) {
    for (const auto n : kSizes) {
      const at::Tensor in = input(rank, n, type);
      // all_gather out of place, the output pre-filled so that a short copy shows.
      at::Tensor cpu_out = at::full({n * size}, 99, type);
      at::Tensor gpu_out = at::full({n * size}, 99, on_gpu(type));
      mpi.all_gather(cpu_out, in);
      nccl->all_gather(gpu_out, in.to(on_gpu(type)));
      BOOST_TEST(same(gpu_out, cpu_out), label("all_gather", type, n));
      // In place (ZeRO's way): the input is this rank's part of the output.
      at::Tensor gpu_in_place = at::full({n * size}, 99, on_gpu(type));
      gpu_in_place.narrow(0, rank * n, n).copy_(in);
      nccl->all_gather_async(gpu_in_place, gpu_in_place.narrow(0, rank * n, n))->wait();
      BOOST_TEST(same(gpu_in_place, cpu_out), label("all_gather in place", type, n));
      // reduce_scatter, sum and max.
      for (const auto op : {ReduceOp::kSum, ReduceOp::kMax}) {
        const at::Tensor whole = input(rank, n * size, type);
        at::Tensor cpu_part = at::full({n}, 99, type);
        at::Tensor gpu_part = at::full({n}, 99, on_gpu(type));
        mpi.reduce_scatter(cpu_part, whole, {op});
        nccl->reduce_scatter_async(gpu_part, whole.to(on_gpu(type)), {op})->wait();
        BOOST_TEST(same(gpu_part, cpu_part),
                   label("reduce_scatter", type, n, " ") + cohort::comm::to_string(op));
      }
      // broadcast from the first and the last rank.
      for (const int root : {0, size - 1}) {
        at::Tensor cpu_b = input(rank, n, type);
        at::Tensor gpu_b = cpu_b.to(on_gpu(type));
        mpi.broadcast(cpu_b, root);
        nccl->broadcast(gpu_b, root);
        BOOST_TEST(same(gpu_b, cpu_b),
                   label("broadcast", type, n, " root ") + std::to_string(root));
      }
      // gather to the last rank (NCCL has none: a group of receives there).
      const int root = size - 1;
      at::Tensor cpu_g = rank == root ? at::full({n * size}, 99, type) : at::Tensor();
      at::Tensor gpu_g = rank == root ? at::full({n * size}, 99, on_gpu(type)) : at::Tensor();
      mpi.gather(cpu_g, in, root);
      nccl->gather(gpu_g, in.to(on_gpu(type)), root);
      if (rank == root) BOOST_TEST(same(gpu_g, cpu_g), label("gather", type, n));
      checked += 6;
    }
  }
  nccl->barrier();
  nccl->barrier_async()->wait();
  BOOST_TEST_MESSAGE("NCCL all_gather (in and out of place), reduce_scatter, broadcast, gather: "
                     << checked << " cases equal MPI's; barrier passed; " << size << " rank(s)");
}

// Sends and receives of one group. Two ranks or more: each sends to the next and receives from
// the previous (a ring, which deadlocks unless the group is one ncclGroupStart/End). One rank has
// no peer: a transfer to itself is refused before anything is sent, on both backends.
BOOST_AUTO_TEST_CASE(p2p_group_equals_mpi) {
  Communicator* nccl = nccl_or_skip("the NCCL point-to-point group");
  if (!nccl) return;
  Communicator& mpi = *world().mpi;
  const int size = mpi.size(), rank = mpi.rank();
  BOOST_TEST(nccl->p2p_group_async({}).empty());
  if (size == 1) {
    for (Communicator* c : {nccl, &mpi}) {
      const auto type = c == nccl ? on_gpu(at::kFloat) : at::TensorOptions(at::kFloat);
      std::vector<Communicator::Transfer> self = {{true, at::ones({4}, type), 0, 0},
                                                  {false, at::zeros({4}, type), 0, 0}};
      BOOST_CHECK_THROW(c->p2p_group_async(self), cohort::CommError);
    }
    BOOST_TEST_MESSAGE(
        "p2p group at one rank: transfers to itself refused on NCCL and MPI alike "
        "(an exchange needs two GPUs)");
    return;
  }
  const int next = (rank + 1) % size, previous = (rank + size - 1) % size;
  for (const auto type : kTypes) {
    const at::Tensor mine = input(rank, 1001, type);
    at::Tensor cpu_got = at::zeros({1001}, type);
    at::Tensor gpu_got = at::zeros({1001}, on_gpu(type));
    for (auto& w : mpi.p2p_group_async({{true, mine, next, 1}, {false, cpu_got, previous, 1}}))
      w->wait();
    for (auto& w : nccl->p2p_group_async(
             {{true, mine.to(on_gpu(type)), next, 1}, {false, gpu_got, previous, 1}}))
      w->wait();
    BOOST_TEST(same(gpu_got, cpu_got), label("p2p ring", type, 1001));
    BOOST_TEST(same(gpu_got, input(previous, 1001, type)), label("p2p ring value", type, 1001));
  }
  BOOST_TEST_MESSAGE("p2p group: a ring exchange over " << size << " ranks equals MPI's");
}

// The caller drops its tensors (and, for the all-reduce, its Work) right after issuing, while the
// GPU still runs earlier work that the operation waits for. The communicator must hold them: the
// caching allocator then cannot give their memory to the next allocation of that size, and the
// all-gather's output still receives the dropped input's values.
BOOST_AUTO_TEST_CASE(asynchronous_operations_keep_dropped_tensors) {
  Communicator* nccl = nccl_or_skip("the NCCL keep-alive check");
  if (!nccl) return;
  const int size = nccl->size(), rank = nccl->rank();
  const std::int64_t n = (3 << 20) + 333;  // a size no other allocation here has
  // Everything made before the GPU is kept busy: a copy from the host would wait for that work.
  at::Tensor out = at::full({n * size}, -1.0, on_gpu(at::kFloat));
  at::Tensor in =
      at::arange(n, on_gpu(at::kLong)).remainder(7).sub(3 + 2 - rank * 2).to(at::kFloat);
  at::Tensor reduced = in.clone();
  const at::Tensor a = at::randn({8192, 8192}, on_gpu(at::kFloat));
  // About a second of matrix products queued on torch's stream: what is issued next waits.
  std::vector<at::Tensor> busy;
  for (int i = 0; i < 24; ++i) busy.push_back(at::mm(a, a));

  // The control: a tensor that no operation holds, dropped, is handed out again at once.
  at::Tensor probe = at::empty({n}, on_gpu(at::kFloat));
  const void* probe_at = probe.data_ptr();
  probe.reset();
  at::Tensor again = at::empty({n}, on_gpu(at::kFloat));
  const bool allocator_reuses = again.data_ptr() == probe_at;
  BOOST_TEST(allocator_reuses,
             "control: the caching allocator did not reuse a dropped block, "
             "so the checks below could not fail");
  again.reset();

  auto gathered = nccl->all_gather_async(out, in);
  const void* in_at = in.data_ptr();
  in.reset();
  const void* reduced_at = reduced.data_ptr();
  nccl->all_reduce_async(reduced);  // the Work dropped too
  reduced.reset();
  BOOST_TEST(!gathered->test(),
             "the all-gather finished before the GPU's earlier work did: the "
             "keep-alive was not put to the test");
  // Enough allocations of that size to take every free block that fits, the dropped ones first
  // had they been freed.
  std::vector<at::Tensor> others;
  for (int i = 0; i < 8; ++i) others.push_back(at::full({n}, 7.0, on_gpu(at::kFloat)));
  for (const at::Tensor& t : others) {
    BOOST_TEST(t.data_ptr() != in_at, "the all-gather's dropped input was handed out in flight");
    BOOST_TEST(t.data_ptr() != reduced_at, "the all-reduce's dropped tensor was handed out");
  }
  gathered->wait();
  at::Tensor want = at::cat([&] {
    std::vector<at::Tensor> parts;
    for (int r = 0; r < size; ++r) parts.push_back(input(r, n, at::kFloat));
    return parts;
  }());
  BOOST_TEST(same(out, want), "the all-gather's output lost the dropped input's values");
  nccl->barrier();
  busy.clear();
  BOOST_TEST_MESSAGE(
      "keep-alive: dropped tensors of in-flight operations not reused (control "
      "reused: "
      << allocator_reuses << "), all-gather result intact");
}

BOOST_AUTO_TEST_SUITE_END()
