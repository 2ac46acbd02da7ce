#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <numeric>
#include <set>

#include "cohort/ckpt/shard_plan.hpp"
#include "cohort/error.hpp"

using cohort::ckpt::overlaps;
using cohort::ckpt::ShardPlan;
using cohort::ckpt::TensorSpec;

namespace {

std::vector<TensorSpec> model() {  // a small MLP's parameters: 4-byte floats, mixed sizes
  return {{"fc0.weight", "float32", {64, 24}, 4},
          {"fc0.bias", "float32", {64}, 4},
          {"fc1.weight", "float32", {10, 64}, 4},
          {"fc1.bias", "float32", {10}, 4},
          {"steps", "int64", {}, 8}};
}

// Every element of every tensor is written by exactly one rank.
void check_exact_cover(const ShardPlan& plan) {
  for (std::size_t t = 0; t < plan.tensors().size(); ++t) {
    std::int64_t next = 0;
    for (const auto& s : plan.slices()) {
      if (s.tensor != t) continue;
      BOOST_TEST(s.offset == next);
      BOOST_TEST(s.count > 0);
      next += s.count;
    }
    BOOST_TEST(next == plan.tensors()[t].numel());
  }
  // A rank's part is contiguous: at most one slice of each tensor (one dataset per shard).
  std::set<std::pair<int, std::size_t>> seen;
  for (const auto& s : plan.slices()) BOOST_TEST(seen.insert({s.rank, s.tensor}).second);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ckpt_shard_plan)

BOOST_AUTO_TEST_CASE(one_rank_writes_everything_whole) {
  const auto plan = ShardPlan::balanced(model(), 1);
  BOOST_TEST(plan.slices().size() == 5u);
  BOOST_TEST(plan.bytes_of(0) == (64 * 24 + 64 + 640 + 10) * 4 + 8);
  check_exact_cover(plan);
}

BOOST_AUTO_TEST_CASE(ranks_write_disjoint_parts_balanced_by_bytes) {
  for (int world : {2, 3, 4, 5, 7, 16, 33}) {
    const auto plan = ShardPlan::balanced(model(), world);
    check_exact_cover(plan);
    std::int64_t total = 0, most = 0, least = INT64_MAX;
    for (int r = 0; r < world; ++r) {
      total += plan.bytes_of(r);
      most = std::max(most, plan.bytes_of(r));
      least = std::min(least, plan.bytes_of(r));
    }
    BOOST_TEST(total == (64 * 24 + 64 + 640 + 10) * 4 + 8);  // one copy in all, not world copies
    BOOST_TEST(most - least <= 16, "world " << world << ": " << least << ".." << most);
    for (const auto& s : plan.slices()) BOOST_TEST((s.rank >= 0 && s.rank < world));
  }
}

BOOST_AUTO_TEST_CASE(more_ranks_than_elements_leaves_some_idle) {
  const auto plan = ShardPlan::balanced({{"x", "float32", {3}, 4}}, 8);
  check_exact_cover(plan);
  int writers = 0;
  for (int r = 0; r < 8; ++r) writers += plan.bytes_of(r) > 0;
  BOOST_TEST(writers == 3);
}

BOOST_AUTO_TEST_CASE(overlaps_reassemble_any_range) {
  const auto plan = ShardPlan::balanced(model(), 3);
  // Reassemble fc0.weight (tensor 0) and a range straddling a cut, from the stored slices.
  for (const auto& [offset, count] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 64 * 24}, {500, 700}, {1535, 1}}) {
    std::vector<int> hits(static_cast<std::size_t>(count), 0);
    for (const auto& o : overlaps(plan.slices(), 0, offset, count)) {
      const auto& s = plan.slices()[o.slice];
      BOOST_TEST(s.offset + o.from_slice == offset + o.into_range);
      for (std::int64_t i = 0; i < o.count; ++i) ++hits[static_cast<std::size_t>(o.into_range + i)];
    }
    BOOST_TEST(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
  }
}

BOOST_AUTO_TEST_CASE(bad_plans_are_refused) {
  BOOST_CHECK_THROW(ShardPlan::balanced(model(), 0), cohort::ConfigError);
  BOOST_CHECK_THROW(ShardPlan::balanced({{"a", "f", {2}, 4}, {"a", "f", {2}, 4}}, 2),
                    cohort::ConfigError);
  BOOST_CHECK_THROW(ShardPlan::balanced({{"a", "f", {-1}, 4}}, 2), cohort::ConfigError);
}

// Pipeline x data: stage 0's tensors on ranks {0, 1}, stage 1's on {2, 3}, a tied table on all.
BOOST_AUTO_TEST_CASE(tensors_go_to_their_holders_only) {
  auto tensors = model();
  const std::vector<std::vector<int>> holders{{0, 1}, {0, 1}, {2, 3}, {2, 3}, {0, 1, 2, 3}};
  const auto plan = ShardPlan::among_holders(tensors, holders, 4);
  check_exact_cover(plan);
  for (const auto& s : plan.slices()) {
    const auto& who = holders[s.tensor];
    BOOST_TEST((std::find(who.begin(), who.end(), s.rank) != who.end()));
  }
  // Within a group the bytes are balanced: stage 0's 6400 bytes split 3200 / 3200.
  BOOST_TEST(plan.bytes_of(0) + plan.bytes_of(1) >= (64 * 24 + 64) * 4);
  BOOST_TEST(std::abs(plan.bytes_of(0) - plan.bytes_of(1)) <= 8);
  BOOST_CHECK_THROW(ShardPlan::among_holders(tensors, {{0}, {0}, {0}, {0}, {}}, 4),
                    cohort::ConfigError);
  BOOST_CHECK_THROW(ShardPlan::among_holders(tensors, {{0}, {0}, {0}, {0}, {4}}, 4),
                    cohort::ConfigError);
}

// ZeRO: the optimizer state of fc0.weight (1536 elements) held in parts, 768 + 768 by ranks 0
// and 1 of one data group, and again in three other parts by ranks 2, 3 (a tied copy cut
// elsewhere); the rest whole. Every element written once, by a rank that holds it.
BOOST_AUTO_TEST_CASE(tensors_held_in_parts_are_written_by_their_holders) {
  using cohort::ckpt::Holding;
  const auto tensors = model();
  std::vector<std::vector<Holding>> holdings(tensors.size());
  holdings[0] = {{0, 0, 768}, {1, 768, 768}, {2, 0, 500}, {3, 500, 1036}};
  holdings[1] = {{1, 0, 64}, {0, 0, 0}};  // an empty part: holds nothing
  for (std::size_t t = 2; t < tensors.size(); ++t) {
    for (int r = 0; r < 4; ++r) holdings[t].push_back({r, 0, tensors[t].numel()});
  }
  const auto plan = ShardPlan::among_holdings(tensors, holdings, 4);
  check_exact_cover(plan);
  for (const auto& s : plan.slices()) {
    const bool held =
        std::any_of(holdings[s.tensor].begin(), holdings[s.tensor].end(), [&](const Holding& h) {
          return h.rank == s.rank && h.offset <= s.offset &&
                 s.offset + s.count <= h.offset + h.count;
        });
    BOOST_TEST(held, "slice of tensor " << s.tensor << " at " << s.offset << " by " << s.rank);
  }
  // The first holder writes a piece: ranks 0 and 1 write fc0.weight, 2 and 3 none of it.
  for (const auto& s : plan.slices()) {
    if (s.tensor == 0) BOOST_TEST((s.rank == 0 || s.rank == 1));
    if (s.tensor == 1) BOOST_TEST(s.rank == 1);
  }
  // Whole-held tensors are still balanced among their holders.
  std::set<int> writers;
  for (const auto& s : plan.slices()) {
    if (s.tensor >= 2) writers.insert(s.rank);
  }
  BOOST_TEST(writers.size() > 1);
  // Elements nobody holds, and a part outside its tensor, are refused.
  auto gap = holdings;
  gap[0] = {{0, 0, 768}, {1, 769, 767}};
  BOOST_CHECK_THROW(ShardPlan::among_holdings(tensors, gap, 4), cohort::ConfigError);
  auto outside = holdings;
  outside[1] = {{0, 0, 64}, {1, 60, 8}};
  BOOST_CHECK_THROW(ShardPlan::among_holdings(tensors, outside, 4), cohort::ConfigError);
  auto stranger = holdings;
  stranger[1] = {{4, 0, 64}};
  BOOST_CHECK_THROW(ShardPlan::among_holdings(tensors, stranger, 4), cohort::ConfigError);
}

BOOST_AUTO_TEST_SUITE_END()
