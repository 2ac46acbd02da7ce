#include <boost/test/unit_test.hpp>
#include <chrono>
#include <string>

#include "cohort/comm/flight_recorder.hpp"

using cohort::comm::FlightRecord;
using cohort::comm::FlightRecorder;
using Clock = std::chrono::steady_clock;

namespace {

FlightRecord record(std::uint64_t seq, const char* op, Clock::duration timeout) {
  FlightRecord r;
  r.seq = seq;
  r.op = op;
  r.numel = 4;
  r.bytes = 16;
  r.dtype = "Float";
  r.start = Clock::now();
  r.deadline = r.start + timeout;
  return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(comm_flight_recorder)

BOOST_AUTO_TEST_CASE(an_operation_in_flight_outlives_the_ring) {
  FlightRecorder recorder(64);
  recorder.started(record(0, "recv", std::chrono::seconds(2)));
  for (std::uint64_t seq = 1; seq <= 100; ++seq) {
    recorder.started(record(seq, "all_reduce", std::chrono::seconds(2)));
    recorder.finished(seq);
  }
  BOOST_TEST(recorder.in_flight() == 1u);
  BOOST_TEST(recorder.snapshot().front().seq == 37u);  // the ring kept the last 64 only
  const auto later = Clock::now() + std::chrono::seconds(3);
  const auto overdue = recorder.overdue(later);
  BOOST_TEST_REQUIRE(overdue.size() == 1u);
  BOOST_TEST(overdue.front().first.seq == 0u);
  BOOST_TEST(overdue.front().first.op == "recv");
  BOOST_TEST(recorder.overdue(Clock::now()).empty());  // not before its deadline
  const std::string dump = recorder.dump();
  BOOST_TEST(dump.find("#0      recv") != std::string::npos, dump);
  BOOST_TEST(dump.find("IN FLIGHT") != std::string::npos);
  BOOST_TEST(recorder.totals("all_reduce").count == 100);  // counted though out of the ring
  BOOST_TEST(recorder.totals("all_reduce").bytes == 1600);
  recorder.finished(0);
  BOOST_TEST(recorder.in_flight() == 0u);
  BOOST_TEST(recorder.overdue(later).empty());
  recorder.finished(0);  // twice: counted once
  BOOST_TEST(recorder.totals("recv").count == 1);
}

BOOST_AUTO_TEST_CASE(the_probe_of_an_operation_travels_with_it) {
  FlightRecorder recorder(4);
  recorder.started(record(5, "send", std::chrono::milliseconds(0)));
  bool asked = false;
  recorder.set_probe(5, [&] {
    asked = true;
    return true;
  });
  recorder.set_probe(6, [] { return false; });  // not in flight: ignored
  const auto overdue = recorder.overdue(Clock::now() + std::chrono::seconds(1));
  BOOST_TEST_REQUIRE(overdue.size() == 1u);
  BOOST_TEST_REQUIRE(static_cast<bool>(overdue.front().second));
  BOOST_TEST(overdue.front().second());
  BOOST_TEST(asked);
}

BOOST_AUTO_TEST_SUITE_END()
