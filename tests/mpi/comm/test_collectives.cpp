// Every collective against a serial reference: each rank can compute every other rank's input,
// so the expected result is computed locally. Values are small integers, exact in every dtype
// (bf16 included), so sums compare exactly.
#include <ATen/ATen.h>

#include <algorithm>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <ctime>
#include <thread>

#include "cohort/comm/factory.hpp"
#include "cohort/error.hpp"
#include "mpi_fixture.hpp"

using cohort::comm::Backend;
using cohort::comm::CollectiveOptions;
using cohort::comm::ReduceOp;

namespace {

std::unique_ptr<cohort::comm::Communicator> make(bool debug = false) {
  cohort::comm::CommOptions options;
  options.timeout = std::chrono::seconds(60);
  options.debug_check = debug;
  return cohort::comm::make_communicator(cohort::test::session(), Backend::kMpi, options);
}

// Rank r's input: small integers in [-8, 8] that differ by rank and position.
at::Tensor input(int rank, int64_t n, at::ScalarType type) {
  return (at::arange(n, at::kLong).remainder(7) - 3 + rank * 2 - 2).to(type);
}

at::Tensor reference(int size, int64_t n, at::ScalarType type, ReduceOp op) {
  at::Tensor acc = input(0, n, at::kDouble);
  for (int r = 1; r < size; ++r) {
    const at::Tensor x = input(r, n, at::kDouble);
    if (op == ReduceOp::kSum || op == ReduceOp::kAvg) acc = acc + x;
    if (op == ReduceOp::kMax) acc = at::maximum(acc, x);
    if (op == ReduceOp::kMin) acc = at::minimum(acc, x);
  }
  if (op == ReduceOp::kAvg) acc = acc / size;
  return acc.to(type);
}

const std::vector<at::ScalarType> kTypes = {at::kFloat, at::kDouble, at::kLong, at::kBFloat16};
// 0, 1, odd sizes, and 64 MiB of float32.
const std::vector<int64_t> kSizes = {0, 1, 7, 1001, 16 * 1024 * 1024};

bool same(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && at::equal(a.to(at::kDouble), b.to(at::kDouble));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(comm_collectives)

BOOST_DATA_TEST_CASE(all_reduce_matches_reference,
                     boost::unit_test::data::make(kTypes) * boost::unit_test::data::make(kSizes),
                     type, n) {
  auto comm = make();
  for (const auto op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kAvg}) {
    if (op == ReduceOp::kAvg && !at::isFloatingType(type)) continue;
    if (n > 4096 && op != ReduceOp::kSum) continue;  // the big size once is enough
    at::Tensor t = input(comm->rank(), n, type);
    comm->all_reduce(t, {op});
    at::Tensor want = reference(comm->size(), n, type, op);
    if (op == ReduceOp::kAvg) {
      BOOST_TEST(at::allclose(t.to(at::kDouble), want.to(at::kDouble), 1e-2, 1e-2));
    } else {
      BOOST_TEST(same(t, want),
                 "all_reduce " << cohort::comm::to_string(op) << " " << type << " n=" << n);
    }
  }
}

BOOST_DATA_TEST_CASE(broadcast_all_gather_reduce_scatter,
                     boost::unit_test::data::make(kTypes) * boost::unit_test::data::make(kSizes),
                     type, n) {
  auto comm = make();
  const int size = comm->size();
  const int rank = comm->rank();
  const int64_t m = std::min<int64_t>(n, 1 << 20);  // gathers hold size x n
  for (int root = 0; root < size; ++root) {
    at::Tensor t = input(rank, m, type);
    comm->broadcast(t, root);
    BOOST_TEST(same(t, input(root, m, type)), "broadcast from " << root);
  }
  at::Tensor gathered = at::empty({size * m}, at::TensorOptions(type));
  comm->all_gather(gathered, input(rank, m, type));
  for (int r = 0; r < size; ++r) BOOST_TEST(same(gathered.narrow(0, r * m, m), input(r, m, type)));

  // gather: the root gets every rank's input; the other ranks' output is left as it was.
  for (int root = 0; root < size; ++root) {
    for (const bool async : {false, true}) {
      at::Tensor out = at::full({size * m}, 7, at::TensorOptions(type));
      if (async) {
        comm->gather_async(out, input(rank, m, type), root)->wait();
      } else {
        comm->gather(out, input(rank, m, type), root);
      }
      for (int r = 0; r < size; ++r) {
        const at::Tensor want =
            rank == root ? input(r, m, type) : at::full({m}, 7, at::TensorOptions(type));
        BOOST_TEST(same(out.narrow(0, r * m, m), want), "gather to " << root << " part " << r);
      }
    }
  }
  at::Tensor none;  // off the root the output may be undefined
  if (rank != 0)
    comm->gather(none, input(rank, m, type), 0);
  else
    comm->gather(gathered, input(rank, m, type), 0);

  at::Tensor scattered = at::empty({m}, at::TensorOptions(type));
  at::Tensor whole = input(rank, size * m, type);
  comm->reduce_scatter(scattered, whole);
  at::Tensor want = reference(size, size * m, type, ReduceOp::kSum).narrow(0, rank * m, m);
  BOOST_TEST(same(scattered, want), "reduce_scatter " << type << " n=" << m);
}

// In place, as ZeRO calls them: all_gather's input is this rank's part of the output, and
// reduce_scatter's output this rank's part of the input; blocking and asynchronous.
BOOST_DATA_TEST_CASE(all_gather_and_reduce_scatter_in_place,
                     boost::unit_test::data::make(kTypes) * boost::unit_test::data::make(kSizes),
                     type, n) {
  auto comm = make();
  const int size = comm->size();
  const int rank = comm->rank();
  const int64_t m = std::min<int64_t>(n, 1 << 20);
  for (const bool async : {false, true}) {
    at::Tensor gathered = at::full({size * m}, 99, at::TensorOptions(type));
    gathered.narrow(0, rank * m, m).copy_(input(rank, m, type));
    const at::Tensor own = gathered.narrow(0, rank * m, m);
    if (async) {
      comm->all_gather_async(gathered, own)->wait();
    } else {
      comm->all_gather(gathered, own);
    }
    for (int r = 0; r < size; ++r) {
      BOOST_TEST(same(gathered.narrow(0, r * m, m), input(r, m, type)),
                 "in-place all_gather " << type << " n=" << m << " part " << r);
    }
    at::Tensor whole = input(rank, size * m, type);
    at::Tensor part = whole.narrow(0, rank * m, m);
    if (async) {
      comm->reduce_scatter_async(part, whole)->wait();
    } else {
      comm->reduce_scatter(part, whole);
    }
    const at::Tensor want = reference(size, size * m, type, ReduceOp::kSum).narrow(0, rank * m, m);
    BOOST_TEST(same(part, want), "in-place reduce_scatter " << type << " n=" << m);
  }
}

// CommOptions::low_cpu_wait: the same results, and a rank waiting for a late one sleeps instead of
// spinning (thread CPU time well under the wall time it waited).
BOOST_AUTO_TEST_CASE(low_cpu_wait_gives_the_same_results_without_spinning) {
  cohort::comm::CommOptions options;
  options.timeout = std::chrono::seconds(60);
  options.low_cpu_wait = true;
  auto comm = cohort::comm::make_communicator(cohort::test::session(), Backend::kMpi, options);
  for (const int64_t n : {int64_t{1}, int64_t{1001}, int64_t{1} << 20}) {
    at::Tensor t = input(comm->rank(), n, at::kFloat);
    comm->all_reduce(t);
    BOOST_TEST(same(t, reference(comm->size(), n, at::kFloat, ReduceOp::kSum)));
    at::Tensor b = input(comm->rank(), n, at::kLong);
    comm->broadcast(b, comm->size() - 1);
    BOOST_TEST(same(b, input(comm->size() - 1, n, at::kLong)));
  }
  const auto cpu_seconds = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  };
  comm->barrier();
  if (comm->rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const double cpu_before = cpu_seconds();
  const auto wall_before = std::chrono::steady_clock::now();
  comm->barrier();  // everyone else waits here ~400 ms for rank 0
  const double cpu = cpu_seconds() - cpu_before;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
  if (comm->rank() != 0) {
    BOOST_TEST(wall > 0.2);
    BOOST_TEST(cpu < 0.25 * wall, "waited " << wall << " s, using " << cpu << " s of CPU");
  }
}

BOOST_AUTO_TEST_CASE(send_recv_ring_and_barrier) {
  auto comm = make();
  const int size = comm->size();
  const int rank = comm->rank();
  at::Tensor out = input(rank, 1000, at::kFloat);
  at::Tensor in = at::empty({1000}, at::kFloat);
  auto recv = comm->recv_async(in, (rank + size - 1) % size, 5);
  auto send = comm->send_async(out, (rank + 1) % size, 5);
  send->wait();
  recv->wait();
  BOOST_TEST(same(in, input((rank + size - 1) % size, 1000, at::kFloat)));
  comm->barrier();
}

// A caller that drops its Work and its tensors at once: the communicator keeps them until the
// transfer completes (a receive must not write into freed memory, a send must not read it), and
// lets them go after. The buffers are watched through weak references.
BOOST_AUTO_TEST_CASE(async_transfers_keep_their_tensors_alive) {
  auto comm = make();
  const int size = comm->size(), rank = comm->rank();
  const int from = (rank + size - 1) % size, to = (rank + 1) % size;
  const std::int64_t n = 1 << 18;  // 1 MiB: past MPI's eager limit, so the send waits for its peer
  using Impl = c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
  using Weak = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
  Weak received{Impl()}, sent{Impl()};
  {
    at::Tensor in = at::empty({n}, at::kFloat);
    received = Weak(in.getIntrusivePtr());
    comm->recv_async(in, from, 9);  // the Work and `in` go at once
  }
  BOOST_TEST(!received.expired(), "the posted receive's buffer was freed before it completed");
  comm->barrier();  // every rank has posted its receive and dropped its handles
  // Alive: only the communicator holds it (it lets a completed one go at its next call, so the
  // buffer is taken back here, before this rank issues anything else).
  at::Tensor held = at::Tensor(received.lock());
  BOOST_TEST_REQUIRE(held.defined(), "the posted receive's buffer was freed");
  {
    at::Tensor out = input(rank, n, at::kFloat);
    sent = Weak(out.getIntrusivePtr());
    comm->send_async(out, to, 9);
  }
  BOOST_TEST(!sent.expired(), "a posted send's buffer was freed before it completed");
  // Waiting on a group's own transfer drives the dropped ones too (one progress engine).
  at::Tensor echo_in = at::empty({1}, at::kFloat), echo_out = at::ones({1}, at::kFloat);
  auto works = comm->p2p_group_async({{false, echo_in, from, 10}, {true, echo_out, to, 10}});
  BOOST_TEST_REQUIRE(works.size() == 2u);
  for (auto& w : works) w->wait();
  comm->barrier();
  BOOST_TEST(same(held, input(from, n, at::kFloat)));
  held = at::Tensor();
  comm->barrier();  // a call after completion lets the finished transfers go
  BOOST_TEST(received.expired(), "a completed receive's buffer is still held");
  BOOST_TEST(sent.expired(), "a completed send's buffer is still held");
  BOOST_TEST(echo_in.item<float>() == 1.0f);
}

// A receive still posted when its communicator goes (no rank sends it): its buffer kept instead
// of freed while MPI may still write into it (a peer's message can still match it).
BOOST_AUTO_TEST_CASE(a_receive_dropped_with_its_communicator_keeps_its_buffer) {
  using Impl = c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
  using Weak = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
  Weak received{Impl()};
  {
    auto comm = make();
    at::Tensor in = at::empty({16}, at::kFloat);
    received = Weak(in.getIntrusivePtr());
    comm->recv_async(in, (comm->rank() + 1) % comm->size(), 12);  // the Work and `in` go at once
    BOOST_TEST(!received.expired(), "the posted receive's buffer was freed before it completed");
  }  // the communicator goes with the receive unfinished
  BOOST_TEST(!received.expired(),
             "a receive's buffer was freed with its communicator while MPI could still write it");
}

// The group's transfers in either order on the two sides: on MPI each progresses on its own.
BOOST_AUTO_TEST_CASE(p2p_group_sends_and_receives_between_neighbours) {
  auto comm = make();
  const int size = comm->size(), rank = comm->rank();
  const int prev = (rank + size - 1) % size, next = (rank + 1) % size;
  at::Tensor from_prev = at::empty({1000}, at::kFloat), from_next = at::empty({1000}, at::kFloat);
  at::Tensor mine = input(rank, 1000, at::kFloat);
  std::vector<cohort::comm::Communicator::Transfer> transfers{{true, mine, next, 1},
                                                              {false, from_prev, prev, 1},
                                                              {true, mine, prev, 2},
                                                              {false, from_next, next, 2}};
  if (rank % 2 == 1) std::reverse(transfers.begin(), transfers.end());
  for (auto& w : comm->p2p_group_async(transfers)) w->wait();
  BOOST_TEST(same(from_prev, input(prev, 1000, at::kFloat)));
  BOOST_TEST(same(from_next, input(next, 1000, at::kFloat)));
  const auto records = comm->flight_recorder().snapshot();
  BOOST_TEST_REQUIRE(records.size() == 4u);  // one record per transfer, all done
  for (const auto& r : records) BOOST_TEST(r.done);
  cohort::comm::Communicator::Transfer self{true, mine, rank, 3};
  BOOST_CHECK_THROW(comm->p2p_group_async({self}), cohort::CommError);
}

BOOST_AUTO_TEST_CASE(async_operations_complete_in_issue_order) {
  auto comm = make();
  std::vector<at::Tensor> tensors;
  std::vector<cohort::comm::WorkPtr> works;
  for (int i = 0; i < 8; ++i) {
    tensors.push_back(input(comm->rank(), 1000 + i * 100000, at::kFloat));
    works.push_back(comm->all_reduce_async(tensors.back()));
  }
  at::Tensor last = input(comm->rank(), 3, at::kFloat);
  comm->all_reduce(last);  // a blocking call after async ones runs after them
  for (auto& w : works) BOOST_TEST(w->test());
  for (int i = 0; i < 8; ++i) {
    works[i]->wait();
    BOOST_TEST(
        same(tensors[i], reference(comm->size(), 1000 + i * 100000, at::kFloat, ReduceOp::kSum)));
  }
  const auto records = comm->flight_recorder().snapshot();
  BOOST_TEST_REQUIRE(records.size() == 9u);
  for (size_t i = 0; i < records.size(); ++i) {
    BOOST_TEST(records[i].seq == i);
    BOOST_TEST(records[i].done);
  }
}

BOOST_AUTO_TEST_CASE(invalid_input_is_a_clear_error) {
  auto comm = make();
  at::Tensor strided = at::zeros({4, 4}).t();
  auto message_has = [](const char* word) {
    return [word](const cohort::CommError& e) {
      return std::string(e.what()).find(word) != std::string::npos;
    };
  };
  BOOST_CHECK_EXCEPTION(comm->all_reduce(strided), cohort::CommError,
                        message_has("not contiguous"));
  at::Tensor flags = at::zeros({4}, at::kBool);
  BOOST_CHECK_EXCEPTION(comm->all_reduce(flags), cohort::CommError, message_has("Bool"));
  at::Tensor ints = at::zeros({4}, at::kLong);
  BOOST_CHECK_EXCEPTION(comm->all_reduce(ints, {ReduceOp::kAvg}), cohort::CommError,
                        message_has("avg"));
  at::Tensor small = at::zeros({3});
  BOOST_CHECK_EXCEPTION(comm->all_gather(small, at::zeros({3})), cohort::CommError,
                        message_has("expected"));
  BOOST_CHECK_EXCEPTION(comm->broadcast(small, comm->size()), cohort::CommError,
                        message_has("not in this"));
  BOOST_CHECK_EXCEPTION(comm->gather(small, at::zeros({3}), comm->rank()), cohort::CommError,
                        message_has("expected"));
  comm->barrier();  // nothing was sent: the communicator still works
}

BOOST_AUTO_TEST_CASE(debug_check_reports_mismatched_calls_on_every_rank) {
  auto comm = make(true);
  at::Tensor t = at::ones({comm->rank() == 0 ? 10 : 11});
  BOOST_CHECK_EXCEPTION(comm->all_reduce(t), cohort::CommError, [](const cohort::CommError& e) {
    return std::string(e.what()).find("collective mismatch") != std::string::npos;
  });
  at::Tensor u = at::ones({5});
  comm->all_reduce(u);  // matching calls still work afterwards
  BOOST_TEST(u[0].item<float>() == comm->size());
}

BOOST_AUTO_TEST_CASE(split_into_even_and_odd_ranks) {
  auto comm = make();
  auto sub = comm->split(comm->rank() % 2, comm->rank());
  BOOST_REQUIRE(sub != nullptr);
  BOOST_TEST(sub->size() == (comm->size() + 1 - comm->rank() % 2) / 2);
  BOOST_TEST(sub->rank() == comm->rank() / 2);
  at::Tensor t = at::full({3}, static_cast<double>(comm->rank()), at::kDouble);
  sub->all_reduce(t);
  double want = 0;
  for (int r = comm->rank() % 2; r < comm->size(); r += 2) want += r;
  BOOST_TEST(t[0].item<double>() == want);
  auto none = comm->split(comm->rank() == 0 ? -1 : 0, 0);
  BOOST_TEST((none == nullptr) == (comm->rank() == 0));
}

BOOST_AUTO_TEST_SUITE_END()
