// The monitor's cross-rank summary on real ranks (MetricsAggregator): the gather to rank 0 gives
// rank 0 the statistics an all-gather gave every rank (mean, min, max, the lowest rank holding an
// extreme, every rank's busy and step time) while the other ranks receive nothing; share() gives
// every rank rank 0's figures and flags, and each node's first rank its node's ranks' times.
#include <boost/test/unit_test.hpp>
#include <memory>

#include "cohort/comm/factory.hpp"
#include "cohort/monitor/summary.hpp"
#include "mpi_fixture.hpp"

namespace comm = cohort::comm;
using cohort::monitor::Field;
using cohort::monitor::MetricsAggregator;
using cohort::monitor::StepSample;

namespace {

// Rank r's two steps: 10 + r ms each, of which comm is 3 ms on rank 2 and 1 ms on the others,
// so that busy is 9, 10, 9 ms on ranks 0, 1, 2: a tie at the minimum that rank 0 must hold.
StepSample step_of(int rank, std::int64_t step) {
  StepSample s;
  s.step = step;
  s.seconds = (10 + rank) * 1e-3;
  s.phase[static_cast<int>(cohort::monitor::Phase::kComm)] = (rank == 2 ? 3 : 1) * 1e-3;
  s.phase[static_cast<int>(cohort::monitor::Phase::kForward)] = s.seconds - s.phase[3];
  s.loss = 2.5;
  s.samples = 8;
  return s;
}

double busy_of(int rank) { return (10 + rank - (rank == 2 ? 3 : 1)) * 1e-3; }

}  // namespace

BOOST_AUTO_TEST_SUITE(monitor_summary_mpi)

BOOST_AUTO_TEST_CASE(rank_0_gets_the_statistics_and_share_spreads_them) {
  auto control = comm::make_communicator(cohort::test::session(), comm::Backend::kMpi, {});
  const int rank = control->rank(), size = control->size();
  auto node = control->split(rank % 2, rank);  // two "nodes": even and odd ranks
  MetricsAggregator aggregator(*control, size, {}, node.get());
  aggregator.add(step_of(rank, 1));
  aggregator.add(step_of(rank, 2));
  auto s = aggregator.summarize({}, {}, {});
  BOOST_TEST(s.first_step == 1);
  BOOST_TEST(s.step == 2);
  BOOST_TEST(s.ranks == size);
  BOOST_TEST(s.loss == 2.5);
  // Nothing was all-gathered: one gather, whose bytes are this rank's row.
  const auto& recorder = control->flight_recorder();
  BOOST_TEST(recorder.totals("all_gather").count == 0);
  BOOST_TEST(recorder.totals("gather").count == 1);
  BOOST_TEST(recorder.totals("gather").bytes == cohort::monitor::kFields * 8);

  double busy_sum = 0, busy_min = 1, busy_max = 0;
  int min_rank = 0, max_rank = 0;
  for (int r = 0; r < size; ++r) {
    busy_sum += busy_of(r);
    if (busy_of(r) < busy_min) busy_min = busy_of(r), min_rank = r;
    if (busy_of(r) > busy_max) busy_max = busy_of(r), max_rank = r;
  }
  if (rank == 0) {
    BOOST_TEST(s[Field::kBusy].mean == busy_sum / size, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(s[Field::kBusy].min == busy_min);
    BOOST_TEST(s[Field::kBusy].min_rank == min_rank);  // the lowest rank of a tie
    BOOST_TEST(s[Field::kBusy].max_rank == max_rank);
    BOOST_TEST(s[Field::kStep].max_rank == size - 1);
    BOOST_TEST(s.slowest_rank == max_rank);
    BOOST_TEST_REQUIRE(s.rank_busy.size() == static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r) {
      BOOST_TEST(s.rank_busy[r] == busy_of(r), boost::test_tools::tolerance(1e-12));
      BOOST_TEST(s.rank_step[r] == (10 + r) * 1e-3, boost::test_tools::tolerance(1e-12));
    }
  } else {  // its own figures only
    BOOST_TEST(s.rank_busy.size() == 1u);
    BOOST_TEST(s[Field::kBusy].mean == busy_of(rank), boost::test_tools::tolerance(1e-12));
  }

  std::uint32_t flags = rank == 0 ? 0b0101u : 0u;
  aggregator.share(s, flags);
  BOOST_TEST(flags == 0b0101u);
  BOOST_TEST(s[Field::kBusy].mean == busy_sum / size, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s[Field::kBusy].min_rank == min_rank);
  BOOST_TEST(s.slowest_rank == max_rank);
  BOOST_TEST(recorder.totals("all_gather").count == 0);
  if (node->rank() == 0) {  // ranks 0 and 1: the even and the odd ranks' times, in rank order
    std::vector<int> want;
    for (int r = rank; r < size; r += 2) want.push_back(r);
    BOOST_TEST_REQUIRE(s.node_ranks.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      BOOST_TEST(s.node_ranks[i].rank == want[i]);
      BOOST_TEST(s.node_ranks[i].busy_s == busy_of(want[i]), boost::test_tools::tolerance(1e-12));
      BOOST_TEST(s.node_ranks[i].step_s == (10 + want[i]) * 1e-3,
                 boost::test_tools::tolerance(1e-12));
    }
  } else {
    BOOST_TEST(s.node_ranks.empty());
  }
}

BOOST_AUTO_TEST_SUITE_END()
