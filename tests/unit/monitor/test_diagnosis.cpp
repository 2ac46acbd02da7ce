// The diagnosis rules on hand-made summaries: each fires on its evidence, stays quiet below its
// threshold, names the right rank, and is said once while it keeps firing.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>

#include "cohort/monitor/diagnosis.hpp"

using namespace cohort::monitor;

namespace {

// `ranks` ranks with the same step; `busy[r]` of rank r's step is its own work, the rest comm.
Summary window(std::int64_t step, double step_s, std::vector<double> busy, double data_s = 0,
               double loss = 1.0) {
  Summary s;
  s.step = step;
  s.first_step = step - 9;
  s.window_steps = 10;
  s.ranks = static_cast<int>(busy.size());
  s.loss = s.last_loss = loss;
  auto& f = s.fields;
  auto set = [&](Field field, double mean, double min, double max, int min_rank, int max_rank) {
    f[static_cast<int>(field)] = {mean, min, max, min_rank, max_rank};
  };
  set(Field::kStep, step_s, step_s, step_s, 0, 0);
  set(Field::kData, data_s, data_s, data_s, 0, 0);
  double lo = 1e9, hi = 0, sum = 0;
  int lo_r = 0, hi_r = 0;
  for (std::size_t r = 0; r < busy.size(); ++r) {
    sum += busy[r];
    if (busy[r] < lo) lo = busy[r], lo_r = static_cast<int>(r);
    if (busy[r] > hi) hi = busy[r], hi_r = static_cast<int>(r);
  }
  set(Field::kBusy, sum / busy.size(), lo, hi, lo_r, hi_r);
  // Exposed comm = step - busy: the least-waiting rank is the busiest one.
  set(Field::kComm, step_s - sum / busy.size(), step_s - hi, step_s - lo, hi_r, lo_r);
  s.rank_busy = busy;
  s.rank_step.assign(busy.size(), step_s);
  s.slowest_rank = hi_r;
  return s;
}

std::vector<std::string> rules(const std::vector<Finding>& fs) {
  std::vector<std::string> out;
  for (const auto& f : fs) out.push_back(f.rule);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(monitor_diagnosis)

BOOST_AUTO_TEST_CASE(data_bound_fires_once_above_the_threshold) {
  Diagnoser d(Thresholds{});
  BOOST_TEST(d.observe(window(10, 0.1, {0.1, 0.1}, 0.09)).empty());  // warm-up: no verdict
  BOOST_TEST(d.observe(window(10, 0.1, {0.1, 0.1}, 0.02)).empty());  // 20% < 25%
  const auto found = d.observe(window(20, 0.1, {0.1, 0.1}, 0.05));   // 50%
  BOOST_TEST_REQUIRE(found.size() == 1u);
  BOOST_TEST(found[0].rule == "data-bound");
  BOOST_TEST(found[0].message.find("50%") != std::string::npos);
  BOOST_TEST(d.observe(window(30, 0.1, {0.1, 0.1}, 0.05)).empty());  // still firing: said once
  BOOST_TEST(d.active() == std::vector<std::string>{"data-bound"});
  d.observe(window(40, 0.1, {0.1, 0.1}, 0.0));
  BOOST_TEST(d.active().empty());
  BOOST_TEST(rules(d.observe(window(50, 0.1, {0.1, 0.1}, 0.05))) ==
             std::vector<std::string>{"data-bound"});  // again after clearing
}

BOOST_AUTO_TEST_CASE(low_gpu_utilisation_is_data_bound_too) {
  Thresholds t;
  t.gpu_util_low = 60;
  Diagnoser d(t);
  d.observe(window(10, 0.1, {0.1, 0.1}));  // warm-up
  auto s = window(20, 0.1, {0.1, 0.1});
  s.gpu = true;
  s.fields[static_cast<int>(Field::kGpuUtil)].mean = 35;
  const auto found = d.observe(s);
  BOOST_TEST_REQUIRE(found.size() == 1u);
  BOOST_TEST(found[0].message.find("GPU utilisation is 35%") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(comm_bound_needs_every_rank_waiting) {
  Diagnoser d(Thresholds{});
  BOOST_TEST(d.observe(window(10, 0.1, {0.06, 0.06})).empty());  // warm-up
  // Both ranks spend 40% of the step in exposed communication.
  BOOST_TEST(rules(d.observe(window(20, 0.1, {0.06, 0.06}))) ==
             std::vector<std::string>{"comm-bound"});
  Diagnoser e(Thresholds{});
  // One rank is slow: the other waits 50%, but the slow one hardly waits: not comm-bound.
  BOOST_TEST(e.observe(window(10, 0.1, {0.05, 0.099})).empty());
  BOOST_TEST(e.observe(window(20, 0.1, {0.05, 0.099})).empty());
}

BOOST_AUTO_TEST_CASE(straggler_named_after_enough_windows) {
  Thresholds t;
  t.straggler_windows = 3;
  Diagnoser d(t, {"n1", "n1", "n2", "n2"});
  const std::vector<double> busy = {0.050, 0.051, 0.080, 0.049};  // rank 2, 59% over the median
  BOOST_TEST(d.observe(window(10, 0.08, busy)).empty());
  BOOST_TEST(d.observe(window(20, 0.08, busy)).empty());
  BOOST_TEST(d.active_flags() == 0u);
  const auto found = d.observe(window(30, 0.08, busy));
  BOOST_TEST_REQUIRE(found.size() == 1u);
  BOOST_TEST(found[0].rule == "straggler");
  // What share() sends the nodes' endpoints: the rule as a bit, and back as its name.
  BOOST_TEST(d.active_flags() == 1u << 2);
  BOOST_TEST(Diagnoser::rules_of(d.active_flags()) == d.active());
  BOOST_TEST(found[0].rank == 2);
  BOOST_TEST(found[0].message.find("rank 2 (n2)") != std::string::npos);
  // Another rank becomes the slow one: named again after its own streak.
  const std::vector<double> other = {0.080, 0.051, 0.050, 0.049};
  BOOST_TEST(d.observe(window(40, 0.08, other)).empty());
  BOOST_TEST(d.observe(window(50, 0.08, other)).empty());
  const auto again = d.observe(window(60, 0.08, other));
  BOOST_TEST_REQUIRE(again.size() == 1u);
  BOOST_TEST(again[0].rank == 0);
}

BOOST_AUTO_TEST_CASE(no_straggler_within_the_margin_or_when_it_comes_and_goes) {
  Diagnoser d(Thresholds{});
  for (int i = 1; i <= 5; ++i) {
    BOOST_TEST(d.observe(window(10 * i, 0.06, {0.050, 0.055})).empty());  // 5% apart
  }
  Diagnoser e(Thresholds{});
  for (int i = 1; i <= 6; ++i) {
    const bool slow = i % 2 == 1;
    BOOST_TEST(e.observe(window(10 * i, slow ? 0.095 : 0.055, {0.05, slow ? 0.09 : 0.05})).empty());
  }
}

BOOST_AUTO_TEST_CASE(divergence_on_a_rising_loss) {
  Thresholds t;
  t.divergence_windows = 3;
  t.divergence_rise = 0.2;
  Diagnoser d(t);
  for (double loss : {2.0, 1.5, 1.2, 1.25, 1.3}) {  // rises twice only, by 8%
    BOOST_TEST(d.observe(window(10, 0.1, {0.1, 0.1}, 0, loss)).empty());
  }
  const auto found = d.observe(window(60, 0.1, {0.1, 0.1}, 0, 1.6));  // third rise, +33%
  BOOST_TEST_REQUIRE(found.size() == 1u);
  BOOST_TEST(found[0].rule == "divergence");
  Diagnoser quiet(t);
  for (double loss : {1.0, 1.01, 1.02, 1.03, 1.04}) {  // rising, but by 4%
    BOOST_TEST(quiet.observe(window(10, 0.1, {0.1, 0.1}, 0, loss)).empty());
  }
  Diagnoser converged(t);  // noise near zero: +200%, but 0.0002% of the starting loss
  for (double loss : {2.3, 1e-6, 2e-6, 3e-6, 6e-6}) {
    BOOST_TEST(converged.observe(window(10, 0.1, {0.1, 0.1}, 0, loss)).empty());
  }
}

BOOST_AUTO_TEST_CASE(divergence_on_a_non_finite_loss) {
  Diagnoser d(Thresholds{});
  const auto found =
      d.observe(window(10, 0.1, {0.1, 0.1}, 0, std::numeric_limits<double>::quiet_NaN()));
  BOOST_TEST_REQUIRE(found.size() == 1u);
  BOOST_TEST(found[0].message.find("NaN") != std::string::npos);
  BOOST_TEST(Diagnoser::non_finite_loss(7, INFINITY).message.find("infinite at step 7") !=
             std::string::npos);
}

// A host with 6.3 runnable on 2 cores: the run's timings are the host's. The rule fires once, says
// the load, the cores and the ranks' own CPU, and withholds the verdicts that would blame the
// input, the network or one rank (the same windows make a comm-bound run and a straggler on a
// quiet host: a control); when the load falls, they come back.
BOOST_AUTO_TEST_CASE(cpu_contention_is_checked_first) {
  const auto contended = [](std::int64_t step, double load) {
    Summary s = window(step, 0.1, {0.08, 0.03});  // comm 20% on rank 0, rank 0 2.7x busier
    s.fields[static_cast<int>(Field::kComm)] = {0.045, 0.035, 0.07, 0, 1};  // 35% at least
    s.fields[static_cast<int>(Field::kHostLoad)] = {load, load - 0.5, load, 0, 1};
    s.fields[static_cast<int>(Field::kHostCores)] = {2, 2, 2, 0, 0};
    s.fields[static_cast<int>(Field::kCpuUtil)] = {0.62, 0.5, 0.7, 0, 1};
    return s;
  };
  Diagnoser quiet(Thresholds{}, {"n1", "n2"});
  std::vector<std::string> fired;
  for (std::int64_t step = 10; step <= 40; step += 10) {
    for (const auto& f : quiet.observe(contended(step, 1.2))) fired.push_back(f.rule);
  }
  BOOST_TEST((fired == std::vector<std::string>{"comm-bound", "straggler"}));
  Diagnoser busy(Thresholds{}, {"n1", "n2"});
  fired.clear();
  std::string said;
  for (std::int64_t step = 10; step <= 40; step += 10) {
    for (const auto& f : busy.observe(contended(step, 6.3))) {
      fired.push_back(f.rule);
      said = f.message;
    }
  }
  BOOST_TEST((fired == std::vector<std::string>{"cpu-contention"}));
  BOOST_TEST(said.find("cpu-contention: 6.3 runnable on 2 cores (rank 1 (n2)'s host") == 0u, said);
  BOOST_TEST(said.find("0.62 core(s) each") != std::string::npos);
  BOOST_TEST((busy.active() == std::vector<std::string>{"cpu-contention"}));
  // The load falls: the other rules judge again (the straggler after its 3 windows).
  fired.clear();
  for (std::int64_t step = 50; step <= 80; step += 10) {
    for (const auto& f : busy.observe(contended(step, 1.0))) fired.push_back(f.rule);
  }
  BOOST_TEST((fired == std::vector<std::string>{"comm-bound", "straggler"}));
  // A log written before the fields existed (cores 0): never contended.
  Diagnoser old(Thresholds{});
  Summary s = window(10, 0.1, {0.1, 0.1});
  s.fields[static_cast<int>(Field::kHostLoad)] = {9, 9, 9, 0, 0};
  BOOST_TEST(old.observe(s).empty());
}

BOOST_AUTO_TEST_SUITE_END()
