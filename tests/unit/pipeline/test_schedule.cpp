// The pipeline scheduler, partitioner and layout: pure arithmetic, checked against a small
// simulation of the executor's dependencies (a forward needs the previous stage's forward of the
// same micro-batch; a backward needs the next stage's backward and its own forward).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "cohort/env/parallel_layout.hpp"
#include "cohort/error.hpp"
#include "cohort/pipeline/partition.hpp"
#include "cohort/pipeline/schedule.hpp"

namespace pl = cohort::pipeline;
using pl::Action;
using pl::Schedule;

namespace {

// Runs every stage's actions with forward time f and backward time b, sends free and async.
// Returns the makespan; throws (BOOST_FAIL) on a deadlock.
double simulate(Schedule schedule, int p, int m, double f, double b, double* busy) {
  std::vector<std::vector<Action>> lists;
  for (int s = 0; s < p; ++s) lists.push_back(pl::schedule_actions(schedule, p, s, m));
  std::map<std::pair<int, int>, double> forward_done, backward_done;  // (stage, micro) -> time
  std::vector<std::size_t> next(p, 0);
  std::vector<double> free_at(p, 0);
  *busy = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      if (next[s] == lists[s].size()) continue;
      const Action a = lists[s][next[s]];
      double ready = free_at[s];
      if (a.kind == Action::Kind::kForward) {
        if (s > 0) {
          const auto it = forward_done.find({s - 1, a.micro});
          if (it == forward_done.end()) continue;
          ready = std::max(ready, it->second);
        }
        forward_done[{s, a.micro}] = free_at[s] = ready + f;
        *busy += f;
      } else {
        BOOST_REQUIRE(forward_done.count({s, a.micro}) == 1);
        if (s + 1 < p) {
          const auto it = backward_done.find({s + 1, a.micro});
          if (it == backward_done.end()) continue;
          ready = std::max(ready, it->second);
        }
        backward_done[{s, a.micro}] = free_at[s] = ready + b;
        *busy += b;
      }
      ++next[s];
      progress = true;
    }
  }
  for (int s = 0; s < p; ++s) BOOST_REQUIRE_MESSAGE(next[s] == lists[s].size(), "deadlock");
  return *std::max_element(free_at.begin(), free_at.end());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(pipeline_schedule)

BOOST_AUTO_TEST_CASE(one_f_one_b_orders_warmup_steady_cooldown) {
  BOOST_TEST(pl::describe(pl::schedule_actions(Schedule::kOneFOneB, 4, 0, 6)) ==
             "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  BOOST_TEST(pl::describe(pl::schedule_actions(Schedule::kOneFOneB, 4, 3, 6)) ==
             "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
  BOOST_TEST(pl::describe(pl::schedule_actions(Schedule::kGpipe, 2, 1, 3)) == "F0 F1 F2 B0 B1 B2");
  // Fewer micro-batches than stages: warm-up is cut short.
  BOOST_TEST(pl::describe(pl::schedule_actions(Schedule::kOneFOneB, 4, 0, 2)) == "F0 F1 B0 B1");
}

BOOST_AUTO_TEST_CASE(activations_held) {
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 12; ++m) {
      for (int s = 0; s < p; ++s) {
        const auto one = pl::schedule_actions(Schedule::kOneFOneB, p, s, m);
        const auto gpipe = pl::schedule_actions(Schedule::kGpipe, p, s, m);
        BOOST_TEST(one.size() == static_cast<std::size_t>(2 * m));
        BOOST_TEST(pl::peak_in_flight(one) == std::min(p - s, m));
        BOOST_TEST(pl::peak_in_flight(gpipe) == m);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(no_deadlock_and_bubble_matches_theory) {
  for (const auto schedule : {Schedule::kGpipe, Schedule::kOneFOneB}) {
    for (int p = 1; p <= 5; ++p) {
      for (int m = 1; m <= 16; ++m) {
        double busy = 0;
        const double makespan = simulate(schedule, p, m, 1.0, 2.0, &busy);
        const double bubble = 1.0 - busy / (p * makespan);
        BOOST_TEST(bubble == pl::bubble_fraction_theory(p, m), boost::test_tools::tolerance(1e-12));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(bad_arguments) {
  BOOST_CHECK_THROW(pl::schedule_actions(Schedule::kGpipe, 2, 2, 4), cohort::ConfigError);
  BOOST_CHECK_THROW(pl::schedule_actions(Schedule::kGpipe, 2, 0, 0), cohort::ConfigError);
  BOOST_CHECK_THROW(pl::parse_schedule("zigzag"), cohort::ConfigError);
  BOOST_TEST((pl::parse_schedule("gpipe") == Schedule::kGpipe));
}

BOOST_AUTO_TEST_CASE(balanced_partition_minimises_the_heaviest_stage) {
  using V = std::vector<int>;
  BOOST_TEST(pl::partition_balanced({1, 1, 1, 1}, 2) == (V{0, 2, 4}),
             boost::test_tools::per_element());
  BOOST_TEST(pl::partition_balanced({10, 1, 1, 1, 1, 10}, 3) == (V{0, 1, 5, 6}),
             boost::test_tools::per_element());
  BOOST_TEST(pl::partition_balanced({5, 3, 3, 3}, 2) == (V{0, 2, 4}),
             boost::test_tools::per_element());
  BOOST_TEST(pl::partition_balanced({7}, 1) == (V{0, 1}), boost::test_tools::per_element());
  try {
    pl::partition_balanced({1, 2, 3}, 4);
    BOOST_FAIL("more stages than blocks accepted");
  } catch (const cohort::ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find("more than the model's 3 blocks") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(explicit_partition) {
  using V = std::vector<int>;
  BOOST_TEST(pl::partition_explicit({2, 3}, 5, 2) == (V{0, 2, 5}),
             boost::test_tools::per_element());
  BOOST_CHECK_THROW(pl::partition_explicit({2, 2}, 5, 2), cohort::ConfigError);
  BOOST_CHECK_THROW(pl::partition_explicit({5}, 5, 2), cohort::ConfigError);
  BOOST_CHECK_THROW(pl::partition_explicit({0, 5}, 5, 2), cohort::ConfigError);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(env_parallel_layout)

BOOST_AUTO_TEST_CASE(groups_partition_the_world) {
  const auto layout = cohort::env::ParallelLayout::make(16, 2, 2, 4);
  BOOST_TEST(layout.data() == 4);
  for (int r = 0; r < 16; ++r) {
    const auto c = layout.coords(r);
    BOOST_TEST(layout.rank_of(c) == r);
    // Tensor groups are adjacent ranks, inside one node of 4.
    const auto tensor = layout.tensor_group(r);
    BOOST_TEST(tensor.size() == 2u);
    BOOST_TEST(tensor[1] == tensor[0] + 1);
    BOOST_TEST(tensor[0] / 4 == tensor[1] / 4);
    for (const int q : layout.data_group(r)) {
      BOOST_TEST(layout.coords(q).stage == c.stage);
      BOOST_TEST(layout.coords(q).tensor == c.tensor);
      BOOST_TEST(layout.data_color(q) == layout.data_color(r));
    }
    const auto pipe = layout.pipeline_group(r);
    for (std::size_t s = 0; s < pipe.size(); ++s) {
      BOOST_TEST(layout.coords(pipe[s]).stage == static_cast<int>(s));
      BOOST_TEST(layout.coords(pipe[s]).data == c.data);
    }
  }
  BOOST_TEST(layout.describe().find("rank 5: data 2 stage 0 tensor 1") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(bad_layouts) {
  using cohort::env::ParallelLayout;
  BOOST_CHECK_THROW(ParallelLayout::make(6, 4, 1), cohort::ConfigError);     // not divisible
  BOOST_CHECK_THROW(ParallelLayout::make(8, 1, 4, 2), cohort::ConfigError);  // spans nodes
  BOOST_CHECK_THROW(ParallelLayout::make(8, 0, 1), cohort::ConfigError);
  BOOST_CHECK_NO_THROW(ParallelLayout::make(8, 1, 2, 2));
  // Tensor groups are adjacent ranks: a block placement keeps them on a host, a cyclic one not.
  const auto layout = ParallelLayout::make(4, 1, 2, 2);
  BOOST_CHECK_NO_THROW(layout.check_tensor_hosts({7, 7, 9, 9}));
  try {
    layout.check_tensor_hosts({7, 9, 7, 9});
    BOOST_FAIL("a tensor group across hosts accepted");
  } catch (const cohort::ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find("tensor group of ranks 0..1 spans hosts") !=
               std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()
