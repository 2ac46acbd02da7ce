// MetricWatch: which evaluations make the best K and when early stopping stops, as Lightning's
// ModelCheckpoint(save_top_k) and EarlyStopping(patience, min_delta, mode) decide; its state
// through as_values/from_values, and states no run could have written refused.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>

#include "cohort/train/metric_watch.hpp"

using cohort::train::improves;
using cohort::train::MetricWatch;
using cohort::train::TargetMetric;
using cohort::train::WatchOptions;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

WatchOptions options(TargetMetric best, std::int64_t keep, TargetMetric stop, std::int64_t patience,
                     double min_delta = 0) {
  WatchOptions o;
  o.best_metric = best;
  o.best_keep = keep;
  o.stop_metric = stop;
  o.patience = patience;
  o.min_delta = min_delta;
  return o;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(train_metric_watch)

BOOST_AUTO_TEST_CASE(improvement_follows_the_metrics_direction) {
  BOOST_TEST(improves(0.5, kNaN, true, 0));  // the first evaluation
  BOOST_TEST(improves(0.6, 0.5, true, 0));
  BOOST_TEST(!improves(0.5, 0.5, true, 0));     // equal is not better
  BOOST_TEST(!improves(0.55, 0.5, true, 0.1));  // within min_delta
  BOOST_TEST(improves(0.4, 0.5, false, 0));     // loss: lower
  BOOST_TEST(!improves(0.6, 0.5, false, 0));
  BOOST_TEST(!improves(kNaN, 0.5, false, 0));  // a NaN loss improves nothing
  BOOST_TEST(!improves(kNaN, kNaN, true, 0));
  BOOST_TEST(!improves(-INFINITY, 0.5, false, 0));
}

BOOST_AUTO_TEST_CASE(keeps_the_best_k_best_first) {
  MetricWatch w(options(TargetMetric::kAccuracy, 2, TargetMetric::kNone, 0));
  auto v = w.observe(10, 0.50, kNaN);
  BOOST_TEST(v.keep);
  BOOST_TEST(!v.evicted.has_value());
  v = w.observe(20, 0.70, kNaN);
  BOOST_TEST(v.keep);
  v = w.observe(30, 0.60, kNaN);  // better than the worst kept (0.50): replaces it
  BOOST_TEST(v.keep);
  BOOST_TEST(v.evicted.value() == 10);
  BOOST_TEST(w.kept().size() == 2u);
  BOOST_TEST(w.kept()[0].first == 20);
  BOOST_TEST(w.kept()[1].first == 30);
  v = w.observe(40, 0.60, kNaN);  // equal to the worst kept: the earlier step stays
  BOOST_TEST(!v.keep);
  v = w.observe(50, 0.55, kNaN);
  BOOST_TEST(!v.keep);
  BOOST_TEST(!v.stop);  // no early stopping asked for
}

BOOST_AUTO_TEST_CASE(loss_keeps_the_lowest) {
  MetricWatch w(options(TargetMetric::kLoss, 1, TargetMetric::kNone, 0));
  BOOST_TEST(w.observe(1, 2.0, kNaN).keep);
  BOOST_TEST(!w.observe(2, 2.5, kNaN).keep);
  const auto v = w.observe(3, 1.5, kNaN);
  BOOST_TEST(v.keep);
  BOOST_TEST(v.evicted.value() == 1);
  BOOST_TEST(!w.observe(4, kNaN, kNaN).keep);  // a NaN loss is never the best
  BOOST_TEST(w.kept().front().first == 3);
}

BOOST_AUTO_TEST_CASE(stops_after_patience_evaluations_without_improvement) {
  MetricWatch w(options(TargetMetric::kNone, 1, TargetMetric::kLoss, 3, 0.01));
  BOOST_TEST(!w.observe(1, kNaN, 1.00).stop);
  BOOST_TEST(!w.observe(2, kNaN, 0.995).stop);  // by less than min_delta: 1 without
  BOOST_TEST(!w.observe(3, kNaN, 0.98).stop);   // by 0.02: improved, count back to 0
  BOOST_TEST(w.since_best() == 0);
  BOOST_TEST(!w.observe(4, kNaN, 0.99).stop);
  BOOST_TEST(!w.observe(5, kNaN, 0.98).stop);
  BOOST_TEST(w.observe(6, kNaN, kNaN).stop);  // the third without improvement
  BOOST_TEST(w.stop_best() == 0.98);
  BOOST_TEST(w.observe(7, kNaN, 0.5).stop == false);  // improved again: the count restarts
}

BOOST_AUTO_TEST_CASE(state_round_trips_and_decides_alike) {
  const auto o = options(TargetMetric::kAccuracy, 3, TargetMetric::kAccuracy, 2);
  MetricWatch a(o), b(o);
  const double values[] = {0.3, 0.5, 0.4, 0.45, 0.6, 0.2, 0.1};
  for (int i = 0; i < 4; ++i) a.observe(10 * (i + 1), values[i], values[i]);
  BOOST_TEST(b.from_values(a.as_values(), 40) == "");
  for (int i = 4; i < 7; ++i) {
    const auto va = a.observe(10 * (i + 1), values[i], values[i]);
    const auto vb = b.observe(10 * (i + 1), values[i], values[i]);
    BOOST_TEST(va.keep == vb.keep);
    BOOST_TEST(va.stop == vb.stop);
    BOOST_TEST(va.evicted.value_or(-1) == vb.evicted.value_or(-1));
  }
  BOOST_TEST(a.kept() == b.kept());
  BOOST_TEST(a.as_values() == b.as_values());
}

BOOST_AUTO_TEST_CASE(states_no_run_writes_are_refused) {
  const auto o = options(TargetMetric::kAccuracy, 2, TargetMetric::kNone, 0);
  MetricWatch a(o);
  a.observe(10, 0.5, kNaN);
  a.observe(20, 0.6, kNaN);
  const auto good = a.as_values();
  MetricWatch b(o);
  BOOST_TEST(b.from_values(good, 20) == "");
  BOOST_TEST(b.from_values(good, 15) != "");  // a kept step after the checkpoint's
  auto bad = good;
  bad[5] = 33;  // more kept steps than anyone keeps
  BOOST_TEST(b.from_values(bad, 20) != "");
  bad = good;
  bad[7] = kNaN;  // a kept value that is not a number
  BOOST_TEST(b.from_values(bad, 20) != "");
  bad = good;
  bad[1] = 99;  // no such metric
  BOOST_TEST(b.from_values(bad, 20) != "");
  BOOST_TEST(b.from_values({1.0, 2.0}, 20) != "");
  BOOST_TEST(b.kept() == a.kept());  // refusals leave the state as it was
  // Another metric's state (the config changed): its kept steps are not this metric's.
  MetricWatch loss(options(TargetMetric::kLoss, 2, TargetMetric::kNone, 0));
  BOOST_TEST(loss.from_values(good, 20) == "");
  BOOST_TEST(loss.kept().empty());
  // A smaller best_keep keeps the best of them.
  MetricWatch one(options(TargetMetric::kAccuracy, 1, TargetMetric::kNone, 0));
  BOOST_TEST(one.from_values(good, 20) == "");
  BOOST_TEST(one.kept().size() == 1u);
  BOOST_TEST(one.kept().front().first == 20);
}

BOOST_AUTO_TEST_SUITE_END()
