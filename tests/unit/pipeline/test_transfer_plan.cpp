// Transfer plans and the stall checker (transfer_plan.hpp): every schedule, 2..8 stages and
// 1..32 micro-batches, with the plan the executor runs on each backend checked under that
// backend's rules; controls that show the checker fails where it should (today's executor on
// NCCL, a crossed plan, NCCL's pairing by order) and that broken plans are named.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "cohort/pipeline/schedule.hpp"
#include "cohort/pipeline/transfer_plan.hpp"

namespace pl = cohort::pipeline;
using pl::PlanMode;
using pl::Schedule;
using pl::Semantics;

namespace {

constexpr Schedule kSchedules[] = {Schedule::kGpipe, Schedule::kOneFOneB};
constexpr int kMaxStages = 8, kMaxMicro = 32;

// Each transfer its own group, in the plan's order: what the executor issued before plans existed
// (one send_async or recv_async at a time, each its own operation on NCCL's stream).
std::vector<pl::TransferPlan> unfused(std::vector<pl::TransferPlan> plans) {
  for (auto& plan : plans) {
    std::vector<pl::TransferGroup> groups;
    for (const auto& group : plan.groups) {
      for (const auto& t : group.transfers) groups.push_back({group.before, {t}});
    }
    plan.groups = std::move(groups);
  }
  return plans;
}

std::string stall_of(const std::vector<pl::TransferPlan>& plans, Semantics semantics) {
  return pl::find_stall(plans, semantics).value_or("none");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(pipeline_transfer_plan)

BOOST_AUTO_TEST_CASE(plans_of_two_stages) {
  const auto paired = pl::plan_pipeline(Schedule::kOneFOneB, 2, 2, PlanMode::kPaired);
  BOOST_TEST(pl::describe(paired[0]) ==
             "F0 {send a0 to 1} F1 {send a1 to 1, recv g0 from 1} B0 {recv g1 from 1} B1");
  BOOST_TEST(pl::describe(paired[1]) ==
             "{recv a0 from 0} F0 B0 {send g0 to 0, recv a1 from 0} F1 B1 {send g1 to 0}");
  // Ahead: each receive posted one action early (before action 0, action 0's and action 1's).
  const auto ahead = pl::plan_pipeline(Schedule::kOneFOneB, 2, 2, PlanMode::kAhead);
  BOOST_TEST(pl::describe(ahead[0]) ==
             "F0 {send a0 to 1, recv g0 from 1} F1 {send a1 to 1, recv g1 from 1} B0 B1");
  BOOST_TEST(pl::describe(ahead[1]) ==
             "{recv a0 from 0} F0 {recv a1 from 0} B0 {send g0 to 0} F1 B1 {send g1 to 0}");
  const auto gpipe = pl::plan_pipeline(Schedule::kGpipe, 3, 2, PlanMode::kAhead);
  BOOST_TEST(pl::describe(gpipe[1]) ==
             "{recv a0 from 0, recv a1 from 0} F0 {send a0 to 2, recv g0 from 2} F1 {send a1 to 2, "
             "recv g1 from 2} B0 {send g0 to 0} B1 {send g1 to 0}");
  BOOST_TEST(pl::transfer_tag(paired[1].groups[1].transfers[0]) == 1);  // g0: 2m + 1
  BOOST_TEST(pl::transfer_tag(paired[1].groups[1].transfers[1]) == 2);  // a1: 2m
  // One stage: nothing to send.
  BOOST_TEST(pl::plan_pipeline(Schedule::kOneFOneB, 1, 4, PlanMode::kPaired)[0].groups.empty());
}

BOOST_AUTO_TEST_CASE(every_plan_keeps_its_invariants) {
  for (const auto schedule : kSchedules) {
    for (int p = 1; p <= kMaxStages; ++p) {
      for (int m = 1; m <= kMaxMicro; ++m) {
        for (const auto mode : {PlanMode::kAhead, PlanMode::kPaired}) {
          const auto plans = pl::plan_pipeline(schedule, p, m, mode);
          const auto error = pl::find_plan_error(plans);
          BOOST_TEST_REQUIRE(!error, to_string(schedule) << " p=" << p << " m=" << m << ' '
                                                         << to_string(mode) << ": " << *error);
          // Where each receive is issued: Paired with its own action, Ahead one action early.
          for (const auto& plan : plans) {
            for (const auto& group : plan.groups) {
              for (const auto& t : group.transfers) {
                if (t.send) continue;
                const std::size_t wanted =
                    mode == PlanMode::kPaired || t.action == 0 ? t.action : t.action - 1;
                BOOST_TEST(group.before == wanted);
              }
            }
          }
        }
      }
    }
  }
}

// The plans the executor runs: Paired on NCCL, Ahead on MPI. Paired is also right on MPI.
BOOST_AUTO_TEST_CASE(executor_plans_never_stall) {
  for (const auto schedule : kSchedules) {
    for (int p = 2; p <= kMaxStages; ++p) {
      for (int m = 1; m <= kMaxMicro; ++m) {
        const auto paired = pl::plan_pipeline(schedule, p, m, PlanMode::kPaired);
        const auto ahead = pl::plan_pipeline(schedule, p, m, PlanMode::kAhead);
        const std::string where = std::string(to_string(schedule)) + " p=" + std::to_string(p) +
                                  " m=" + std::to_string(m);
        BOOST_TEST(stall_of(paired, Semantics::kInOrderStream) == "none", where);
        BOOST_TEST(stall_of(paired, Semantics::kIndependent) == "none", where);
        BOOST_TEST(stall_of(ahead, Semantics::kIndependent) == "none", where);
      }
    }
  }
}

// The defect: the executor's Ahead plan on NCCL (a receive posted ahead at the head of the stream)
// stalls, whether its groups are fused or issued one transfer at a time as before.
BOOST_AUTO_TEST_CASE(ahead_plan_stalls_on_nccl) {
  const auto ahead = pl::plan_pipeline(Schedule::kOneFOneB, 2, 2, PlanMode::kAhead);
  BOOST_TEST(stall_of(ahead, Semantics::kInOrderStream) ==
             "stall: stage 0 waits for recv g0 from 1 before B0, its stream stuck on {recv g0 "
             "from 1 (stage 1's send queued)}; stage 1 waits for recv a1 from 0 before F1, its "
             "stream stuck on {recv a1 from 0 (stage 0's send queued)}");
  BOOST_TEST(stall_of(unfused(ahead), Semantics::kInOrderStream) ==
             "stall: stage 0 waits for recv g0 from 1 before B0, its stream stuck on {recv g0 "
             "from 1 (stage 1's send queued)}; stage 1 waits for recv a1 from 0 before F1, its "
             "stream stuck on {recv a1 from 0 (stage 0's send queued)}");
  // Stage 0's early receive of g0 even sits in front of its first send under GPipe.
  BOOST_TEST(stall_of(pl::plan_pipeline(Schedule::kGpipe, 2, 1, PlanMode::kAhead),
                      Semantics::kInOrderStream) ==
             "stall: stage 0 waits for recv g0 from 1 before B0, its stream stuck on {recv g0 "
             "from 1 (stage 1's send not issued)}; stage 1 waits for recv a0 from 0 before F0, its "
             "stream stuck on {recv a0 from 0 (stage 0's send queued)}");
  int stalled = 0, cases = 0;
  for (const auto schedule : kSchedules) {
    for (int p = 2; p <= kMaxStages; ++p) {
      for (int m = 1; m <= kMaxMicro; ++m, ++cases) {
        stalled += pl::find_stall(pl::plan_pipeline(schedule, p, m, PlanMode::kAhead),
                                  Semantics::kInOrderStream)
                       ? 1
                       : 0;
      }
    }
  }
  BOOST_TEST(stalled == cases);
}

// Paired's two transfers issued apart, send first: each stage's stream sits in a send whose
// receive the other has queued behind its own send (the cycle the groups exist to break).
BOOST_AUTO_TEST_CASE(crossed_plan_stalls) {
  const auto crossed = unfused(pl::plan_pipeline(Schedule::kOneFOneB, 2, 2, PlanMode::kPaired));
  BOOST_TEST(stall_of(crossed, Semantics::kInOrderStream) ==
             "stall: stage 0 waits for recv g0 from 1 before B0, its stream stuck on {send a1 to 1 "
             "(stage 1's recv queued)}; stage 1 waits for recv a1 from 0 before F1, its stream "
             "stuck on {send g0 to 0 (stage 0's recv queued)}");
  BOOST_TEST(stall_of(crossed, Semantics::kIndependent) == "none");  // MPI does not mind
}

// NCCL has no tags: transfers between two stages pair in issue order. A send issued late (still
// after its action, so the plan is lawful) meets another micro-batch's receive.
BOOST_AUTO_TEST_CASE(nccl_pairs_by_order_not_tag) {
  auto plans = pl::plan_pipeline(Schedule::kGpipe, 2, 2, PlanMode::kPaired);
  BOOST_TEST(pl::describe(plans[1]) ==
             "{recv a0 from 0} F0 {recv a1 from 0} F1 B0 {send g0 to 0} B1 {send g1 to 0}");
  auto& groups = plans[1].groups;
  groups.back().transfers.push_back(groups[2].transfers[0]);  // send g0 after send g1
  groups.erase(groups.begin() + 2);
  BOOST_TEST(!pl::find_plan_error(plans));
  BOOST_TEST(stall_of(plans, Semantics::kInOrderStream) ==
             "mismatch: stage 1's send g1 to 0 meets stage 0's recv g0 from 1 (transfers pair in "
             "issue order under in-order stream (NCCL))");
  BOOST_TEST(stall_of(plans, Semantics::kIndependent) == "none");  // MPI matches by tag
}

BOOST_AUTO_TEST_CASE(broken_plans_are_named) {
  const auto good = pl::plan_pipeline(Schedule::kOneFOneB, 2, 2, PlanMode::kPaired);
  const auto error = [](const std::vector<pl::TransferPlan>& plans) {
    return pl::find_plan_error(plans).value_or("none");
  };
  auto plans = good;  // stage 1's receive of a0 dropped
  plans[1].groups.erase(plans[1].groups.begin());
  BOOST_TEST(error(plans) == "stage 1: F0 has 0 receives, not 1");
  plans = good;  // received after the forward that needs it
  plans[1].groups[0].before = 1;
  BOOST_TEST(error(plans) == "stage 1: recv a0 from 0 is issued after F0 needs it");
  plans = good;  // sent before the forward that makes it
  plans[0].groups[0].before = 0;
  BOOST_TEST(error(plans) == "stage 0: send a0 to 1 is issued before F0 computes");
  plans = good;  // the same send twice
  plans[0].groups[0].transfers.push_back(plans[0].groups[0].transfers[0]);
  BOOST_TEST(error(plans) == "stage 0: F0 has 2 sends, not 1");
  plans = good;  // to the wrong peer
  plans[1].groups[1].transfers[0].peer = 1;
  BOOST_TEST(error(plans) == "stage 1: send g0 to 1 is not a transfer of B0");
  plans = good;
  plans[0].groups[1].transfers.clear();
  BOOST_TEST(error(plans) == "stage 0: an empty group");
  plans = good;  // stage 1 runs micro-batch 1 twice: a1 sent once, received twice
  plans[1] = pl::plan_transfers({{pl::Action::Kind::kForward, 0},
                                 {pl::Action::Kind::kBackward, 0},
                                 {pl::Action::Kind::kForward, 1},
                                 {pl::Action::Kind::kBackward, 1},
                                 {pl::Action::Kind::kForward, 1},
                                 {pl::Action::Kind::kBackward, 1}},
                                2, 1, PlanMode::kPaired);
  BOOST_TEST(error(plans) == "stage 0 to 1: 1 sends and 2 receives of a1");
  BOOST_TEST(stall_of(plans, Semantics::kInOrderStream) ==
             "invalid plan: stage 0 to 1: 1 sends and 2 receives of a1");
}

// Evaluation (Executor::forward_only): one forward per stage, a blocking receive before it and a
// blocking send after it; the same plan in both modes, stall-free under both rules.
BOOST_AUTO_TEST_CASE(forward_only_pass) {
  const std::vector<pl::Action> forward{{pl::Action::Kind::kForward, 0}};
  for (int p = 2; p <= kMaxStages; ++p) {
    std::vector<pl::TransferPlan> plans;
    for (int s = 0; s < p; ++s)
      plans.push_back(pl::plan_transfers(forward, p, s, PlanMode::kAhead));
    for (int s = 0; s < p; ++s) {
      BOOST_TEST(pl::describe(plans[s]) ==
                 pl::describe(pl::plan_transfers(forward, p, s, PlanMode::kPaired)));
    }
    BOOST_TEST(stall_of(plans, Semantics::kInOrderStream) == "none");
    BOOST_TEST(stall_of(plans, Semantics::kIndependent) == "none");
    if (p == 3) BOOST_TEST(pl::describe(plans[1]) == "{recv a0 from 0} F0 {send a0 to 2}");
  }
}

BOOST_AUTO_TEST_SUITE_END()
