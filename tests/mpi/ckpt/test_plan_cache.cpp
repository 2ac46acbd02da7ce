// The checkpoint plan once per layout (ckpt::PlanCache), on real ranks: the first save gathers
// every rank's tensor list, the next ones with the same tensors reuse the plan (nothing gathered),
// a change on one rank only replans on every rank, and the plan is always plan_checkpoint()'s.
#include <ATen/ops/full.h>

#include <boost/test/unit_test.hpp>
#include <string>

#include "cohort/ckpt/checkpoint.hpp"
#include "cohort/comm/factory.hpp"
#include "mpi_fixture.hpp"

namespace ckpt = cohort::ckpt;

namespace {

// Tensors of this rank's own (a pipeline stage's) and one all ranks hold (replicated).
ckpt::SaveRequest request_of(int rank, int extra) {
  ckpt::SaveRequest r;
  r.tensors.emplace_back("shared.weight", at::full({6, 5}, 1.0f));
  for (int t = 0; t < 3 + extra; ++t) {
    r.tensors.emplace_back("stage" + std::to_string(rank) + ".w" + std::to_string(t),
                           at::full({4, 3 + t}, static_cast<float>(rank)));
  }
  return r;
}

void same_plan(const ckpt::ShardPlan& a, const ckpt::ShardPlan& b) {
  BOOST_REQUIRE_EQUAL(a.tensors().size(), b.tensors().size());
  for (std::size_t i = 0; i < a.tensors().size(); ++i) {
    BOOST_TEST(a.tensors()[i].name == b.tensors()[i].name);
  }
  BOOST_REQUIRE_EQUAL(a.slices().size(), b.slices().size());
  for (std::size_t i = 0; i < a.slices().size(); ++i) {
    BOOST_TEST(a.slices()[i].tensor == b.slices()[i].tensor);
    BOOST_TEST(a.slices()[i].rank == b.slices()[i].rank);
    BOOST_TEST(a.slices()[i].offset == b.slices()[i].offset);
    BOOST_TEST(a.slices()[i].count == b.slices()[i].count);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ckpt_plan_cache)

BOOST_AUTO_TEST_CASE(plans_once_per_layout_and_again_when_one_rank_changes) {
  auto comm = cohort::comm::make_communicator(cohort::test::session(), cohort::comm::Backend::kMpi);
  const int rank = comm->rank(), world = comm->size();
  ckpt::PlanCache cache;
  const auto first = request_of(rank, 0);
  same_plan(cache.plan(first, *comm), ckpt::plan_checkpoint(first, *comm));
  BOOST_TEST(cache.plans_made() == 1);
  BOOST_TEST(cache.last_gather_bytes() > 0);
  for (int save = 0; save < 3; ++save) {
    same_plan(cache.plan(first, *comm), ckpt::plan_checkpoint(first, *comm));
    BOOST_TEST(cache.plans_made() == 1);
    BOOST_TEST(cache.last_gather_bytes() == 0);
  }
  // The last rank holds one tensor more (its optimizer state appeared): every rank replans.
  const auto changed = request_of(rank, rank == world - 1 ? 1 : 0);
  const auto& replanned = cache.plan(changed, *comm);
  BOOST_TEST(cache.plans_made() == 2);
  BOOST_TEST(cache.last_gather_bytes() > 0);
  same_plan(replanned, ckpt::plan_checkpoint(changed, *comm));
  BOOST_TEST(replanned.tensors().size() == static_cast<std::size_t>(1 + 3 * world + 1));
}

BOOST_AUTO_TEST_SUITE_END()
