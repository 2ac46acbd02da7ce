// The statistics of measured times that the benchmarks and the diagnosis share, header-only so that
// every module sees one definition: the benchmarks' median (the upper middle value, which is always
// one of the measurements) and the diagnosis's median (the mean of the two middles, the textbook
// statistic, which keeps straggler findings symmetric for an even number of ranks).
#pragma once

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace cohort::stats {

// The middle value of v, the upper one of an even count; 0 for none.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The median of v with an even count's two middle values averaged; 0 for none.
inline double interpolated_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The median (as median()) of `repeats` timed calls of f, in milliseconds.
template <typename F>
double median_ms(int repeats, F&& f) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  return median(std::move(times));
}

}  // namespace cohort::stats
