// Hot spares' decisions (ops/recovery.hpp) through their whole input space on small jobs: every
// split of up to 5 nodes into active, spare and left-out ones, every blamed subset (with a node
// the job does not hold), restartable or not, a crash loop or not, the budget allowed or not. Each
// plan is checked against what it must keep true, stated here independently of how recovery.cpp
// computes it: the kind from the counts alone, no blamed or left-out node in the next step, the
// survivors and the first healthy spares in it, in the job's order (srun's order of ranks), no node
// lost or invented.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "cohort/error.hpp"
#include "cohort/ops/recovery.hpp"

namespace ops = cohort::ops;
using Names = std::vector<std::string>;

namespace {

bool has(const Names& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

std::set<std::string> all_of(const ops::Allocation& a) {
  std::set<std::string> all(a.active.begin(), a.active.end());
  all.insert(a.spares.begin(), a.spares.end());
  all.insert(a.left_out.begin(), a.left_out.end());
  return all;
}

// The allocations of `total` nodes n1..: `active` of them train, `spares` wait, the rest left out.
ops::Allocation make(int active, int spares, int total, int per_node) {
  ops::Allocation a;
  a.ranks_per_node = per_node;
  for (int i = 1; i <= total; ++i) {
    const std::string node = "n" + std::to_string(i);
    a.nodes.push_back(node);
    (i <= active ? a.active : i <= active + spares ? a.spares : a.left_out).push_back(node);
  }
  return a;
}

// The invariants of a plan that restarts (or places a step after pre-flight).
void check_replacement(const ops::Allocation& before, const ops::Allocation& next,
                       const Names& blamed, const Names& left_out_now, const Names& used) {
  BOOST_TEST(next.active.size() == before.active.size());
  BOOST_TEST(next.ranks_per_node == before.ranks_per_node);
  BOOST_TEST((all_of(next) == all_of(before)));
  Names pool;
  for (const auto& node : before.spares) {
    if (!has(blamed, node)) pool.push_back(node);
  }
  std::set<std::string> expected;  // the survivors and as many of the first healthy spares
  std::size_t replaced = 0;
  for (const auto& node : before.active) {
    if (has(blamed, node)) {
      ++replaced;
    } else {
      expected.insert(node);
    }
  }
  BOOST_REQUIRE(replaced <= pool.size());
  expected.insert(pool.begin(), pool.begin() + static_cast<long>(replaced));
  BOOST_TEST((std::set<std::string>(next.active.begin(), next.active.end()) == expected));
  for (std::size_t i = 0; i < next.active.size(); ++i) {
    BOOST_TEST(!has(next.left_out, next.active[i]));
    BOOST_TEST(!has(blamed, next.active[i]));
    // in the job's order: node names n<i> sort by i here
    if (i > 0)
      BOOST_TEST(std::stoi(next.active[i - 1].substr(1)) < std::stoi(next.active[i].substr(1)));
  }
  BOOST_TEST((used == Names(pool.begin(), pool.begin() + static_cast<long>(replaced))));
  BOOST_TEST((next.spares == Names(pool.begin() + static_cast<long>(replaced), pool.end())));
  for (const auto& node : left_out_now) BOOST_TEST(has(next.left_out, node));
  for (const auto& node : before.left_out) BOOST_TEST(has(next.left_out, node));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ops_recovery_decisions)

BOOST_AUTO_TEST_CASE(every_failure_on_every_small_job) {
  int plans = 0;
  for (int total = 1; total <= 5; ++total) {
    for (int active = 1; active <= total; ++active) {
      for (int spares = 0; active + spares <= total; ++spares) {
        const auto before = make(active, spares, total, 2);
        const auto held = all_of(before);
        Names nodes(held.begin(), held.end());
        nodes.push_back("x9");  // blamed, but not the job's
        for (unsigned mask = 0; mask < (1u << nodes.size()); ++mask) {
          Names blamed;
          for (std::size_t i = 0; i < nodes.size(); ++i) {
            if ((mask >> i & 1u) != 0) blamed.push_back(nodes[i]);
          }
          Names lost_active, lost_spares, newly;
          for (const auto& n : before.active) {
            if (has(blamed, n)) lost_active.push_back(n), newly.push_back(n);
          }
          for (const auto& n : before.spares) {
            if (has(blamed, n)) lost_spares.push_back(n), newly.push_back(n);
          }
          const bool enough =
              lost_active.size() + lost_spares.size() <= static_cast<std::size_t>(spares);
          const bool restart = enough && !newly.empty();  // nothing blamed: requeue
          for (int flags = 0; flags < 8; ++flags) {
            const bool restartable = (flags & 1) != 0, loop = (flags & 2) != 0,
                       allowed = (flags & 4) != 0;
            const auto plan = ops::plan_recovery({restartable, loop, allowed, blamed, before});
            ++plans;
            if (!restartable || loop || !allowed) {
              BOOST_TEST((plan.kind == ops::Recovery::kStop));
              continue;
            }
            BOOST_TEST((plan.left_out_now == newly));
            if (restart) {
              BOOST_TEST((plan.kind == ops::Recovery::kRestart));
              check_replacement(before, plan.next, blamed, newly, plan.spares_used);
            } else {
              BOOST_TEST((plan.kind == ops::Recovery::kRequeue));
              BOOST_TEST(plan.spares_used.empty());
              for (const auto& n : newly) BOOST_TEST(has(plan.next.left_out, n));
              BOOST_TEST((all_of(plan.next) == all_of(before)));
            }
            const auto pre = ops::plan_preflight(blamed, before);
            BOOST_TEST(pre.train == enough);
            if (enough) check_replacement(before, pre.next, blamed, newly, pre.spares_used);
          }
        }
      }
    }
  }
  BOOST_TEST(plans > 10000);
}

// Nothing blamed (a rank died on a healthy node, or the controller has not flagged the lost node
// yet): a new step could land on a dead node again, so the job is requeued, as without spares.
BOOST_AUTO_TEST_CASE(a_failure_that_blames_no_node_is_requeued) {
  const auto before = make(3, 1, 4, 1);
  for (const Names& blamed : {Names{}, Names{"x9"}}) {
    const auto plan = ops::plan_recovery({true, false, true, blamed, before});
    BOOST_TEST((plan.kind == ops::Recovery::kRequeue));
    BOOST_TEST((plan.next.active == before.active));
    BOOST_TEST(plan.spares_used.empty());
  }
}

BOOST_AUTO_TEST_CASE(the_step_and_the_spares_from_the_job) {
  const auto a = ops::initial_allocation({"n1", "n2", "n3", "n4"}, 3, 2);
  BOOST_TEST((a.active == Names{"n1", "n2", "n3"}));
  BOOST_TEST((a.spares == Names{"n4"}));
  BOOST_TEST(a.ranks_per_node == 2);
  BOOST_CHECK_THROW(ops::initial_allocation({"n1", "n2"}, 3, 1), cohort::ConfigError);
  BOOST_CHECK_THROW(ops::initial_allocation({"n1", "n1"}, 1, 1), cohort::ConfigError);
  BOOST_TEST(ops::step_node_count(4, 1, 0) == 3);
  BOOST_TEST(ops::step_node_count(3, 1, 3) == 3);  // requeued onto N nodes: no spare left
  BOOST_CHECK_EXCEPTION(ops::step_node_count(2, 2, 0), cohort::ConfigError,
                        [](const cohort::ConfigError& e) {
                          return std::string(e.what()).find(
                                     "slurm.spare_nodes = 2 leaves no node to train on in a job "
                                     "of 2 nodes") != std::string::npos;
                        });
  BOOST_CHECK_THROW(ops::step_node_count(2, 1, 3), cohort::ConfigError);
}

BOOST_AUTO_TEST_SUITE_END()
