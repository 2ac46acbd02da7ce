#include "cohort/train/metric_watch.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cohort::train {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

bool higher_is_better(TargetMetric metric) {
  return metric == TargetMetric::kAccuracy || metric == TargetMetric::kR2 ||
         metric == TargetMetric::kMicroF1;
}

bool improves(double value, double best, bool higher, double min_delta) {
  if (!std::isfinite(value)) return false;
  if (std::isnan(best)) return true;
  return higher ? value > best + min_delta : value < best - min_delta;
}

MetricWatch::MetricWatch(WatchOptions options) : options_(options), stop_best_(kNaN) {
  options_.best_keep = std::clamp<std::int64_t>(options_.best_keep, 1, kMaxBestKeep);
}

bool MetricWatch::active() const {
  return options_.best_metric != TargetMetric::kNone ||
         (options_.stop_metric != TargetMetric::kNone && options_.patience > 0);
}

WatchVerdict MetricWatch::observe(std::int64_t step, double best_value, double stop_value) {
  WatchVerdict verdict;
  if (step <= evaluated_at_) return verdict;  // seen already (its outcome came with a checkpoint)
  evaluated_at_ = step;
  if (options_.best_metric != TargetMetric::kNone && std::isfinite(best_value)) {
    const bool higher = higher_is_better(options_.best_metric);
    const auto worse = [higher](const std::pair<std::int64_t, double>& a,
                                const std::pair<std::int64_t, double>& b) {
      if (a.second != b.second) return higher ? a.second > b.second : a.second < b.second;
      return a.first < b.first;  // equal values: the earlier step stays ahead
    };
    const bool full = static_cast<std::int64_t>(kept_.size()) >= options_.best_keep;
    // Strictly better than the worst kept (an equal value does not displace an earlier step).
    if (!full || improves(best_value, kept_.back().second, higher, 0.0)) {
      if (full) {
        verdict.evicted = kept_.back().first;
        kept_.pop_back();
      }
      const std::pair<std::int64_t, double> entry{step, best_value};
      kept_.insert(std::upper_bound(kept_.begin(), kept_.end(), entry, worse), entry);
      verdict.keep = true;
    }
  }
  if (options_.stop_metric != TargetMetric::kNone && options_.patience > 0) {
    if (improves(stop_value, stop_best_, higher_is_better(options_.stop_metric),
                 options_.min_delta)) {
      stop_best_ = stop_value;
      since_best_ = 0;
    } else {
      ++since_best_;
    }
    verdict.stop = since_best_ >= options_.patience;
  }
  return verdict;
}

std::vector<double> MetricWatch::as_values() const {
  std::vector<double> v(kStateSize, 0.0);
  v[0] = static_cast<double>(evaluated_at_);
  v[1] = static_cast<double>(options_.best_metric);
  v[2] = static_cast<double>(options_.stop_metric);
  v[3] = stop_best_;
  v[4] = static_cast<double>(since_best_);
  v[5] = static_cast<double>(kept_.size());
  for (std::size_t i = 0; i < kept_.size(); ++i) {
    v[6 + 2 * i] = static_cast<double>(kept_[i].first);
    v[7 + 2 * i] = kept_[i].second;
  }
  return v;
}

std::string MetricWatch::from_values(const std::vector<double>& v, std::int64_t step) {
  // Whole numbers within [lo, hi] (steps are far below 2^53, exact in a double).
  const auto whole = [](double x, double lo, double hi) {
    return std::isfinite(x) && x == std::floor(x) && x >= lo && x <= hi;
  };
  const auto at = static_cast<double>(step);
  const double metrics = static_cast<double>(TargetMetric::kMicroF1);
  if (v.size() != kStateSize) return "holds " + std::to_string(v.size()) + " values";
  if (!whole(v[0], -1, at)) return "last evaluation at step " + std::to_string(v[0]);
  if (!whole(v[1], 0, metrics) || !whole(v[2], 0, metrics)) return "names no metric";
  if (!whole(v[4], 0, at + 1) || std::isinf(v[3])) return "early-stopping state is not one";
  if (!whole(v[5], 0, kMaxBestKeep)) return "keeps " + std::to_string(v[5]) + " best steps";
  std::vector<std::pair<std::int64_t, double>> kept;
  for (std::size_t i = 0; i < static_cast<std::size_t>(v[5]); ++i) {
    const double s = v[6 + 2 * i], value = v[7 + 2 * i];
    if (!whole(s, 0, at) || !std::isfinite(value)) {
      return "best step " + std::to_string(s) + " (value " + std::to_string(value) + ")";
    }
    kept.emplace_back(static_cast<std::int64_t>(s), value);
  }
  // Best first, each step once, as observe() keeps them (in the direction of the saved metric).
  const bool higher = higher_is_better(static_cast<TargetMetric>(static_cast<int>(v[1])));
  for (std::size_t i = 1; i < kept.size(); ++i) {
    const auto& a = kept[i - 1];
    const auto& b = kept[i];
    const bool ordered = a.second != b.second ? (higher ? a.second > b.second : a.second < b.second)
                                              : a.first < b.first;
    if (!ordered) return "best steps out of order (" + std::to_string(b.first) + ")";
    for (std::size_t j = 0; j < i; ++j) {
      if (kept[j].first == b.first) return "best step " + std::to_string(b.first) + " twice";
    }
  }
  evaluated_at_ = static_cast<std::int64_t>(v[0]);
  if (static_cast<TargetMetric>(static_cast<int>(v[2])) == options_.stop_metric) {
    stop_best_ = v[3];
    since_best_ = static_cast<std::int64_t>(v[4]);
  }
  if (static_cast<TargetMetric>(static_cast<int>(v[1])) == options_.best_metric) {
    // A smaller best_keep than the saving run's: the best of them stay.
    if (static_cast<std::int64_t>(kept.size()) > options_.best_keep)
      kept.resize(options_.best_keep);
    kept_ = std::move(kept);
  }
  return "";
}

}  // namespace cohort::train
