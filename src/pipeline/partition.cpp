#include "cohort/pipeline/partition.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "cohort/error.hpp"

namespace cohort::pipeline {

std::vector<int> partition_balanced(const std::vector<std::int64_t>& weights, int stages) {
  const int n = static_cast<int>(weights.size());
  COHORT_CHECK(stages >= 1, ConfigError, "parallel.pipeline_stages must be >= 1");
  COHORT_CHECK(stages <= n, ConfigError, "parallel.pipeline_stages = ", stages,
               " is more than the model's ", n, " blocks; each stage needs at least one");
  std::vector<std::int64_t> prefix(static_cast<std::size_t>(n) + 1, 0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + weights[i];
  const auto span = [&](int from, int to) { return prefix[to] - prefix[from]; };
  constexpr auto kInf = std::numeric_limits<std::int64_t>::max();
  // best[s][i]: the lightest heaviest stage splitting the first i blocks into s stages.
  std::vector<std::vector<std::int64_t>> best(stages + 1, std::vector<std::int64_t>(n + 1, kInf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int s = 1; s <= stages; ++s) {
    for (int i = s; i <= n; ++i) {
      for (int j = s - 1; j < i; ++j) {
        if (best[s - 1][j] == kInf) continue;
        const std::int64_t worst = std::max(best[s - 1][j], span(j, i));
        if (worst < best[s][i]) {
          best[s][i] = worst;
          cut[s][i] = j;
        }
      }
    }
  }
  std::vector<int> bounds(static_cast<std::size_t>(stages) + 1, 0);
  bounds[stages] = n;
  for (int s = stages, i = n; s > 0; --s) i = bounds[s - 1] = cut[s][i];
  return bounds;
}

std::vector<int> partition_explicit(const std::vector<std::int64_t>& counts, int blocks,
                                    int stages) {
  COHORT_CHECK(static_cast<int>(counts.size()) == stages, ConfigError, "parallel.partition has ",
               counts.size(), " entries for ", stages, " pipeline stages");
  std::vector<int> bounds{0};
  for (const auto c : counts) {
    COHORT_CHECK(c >= 1, ConfigError, "parallel.partition: every stage needs >= 1 block, not ", c);
    bounds.push_back(bounds.back() + static_cast<int>(c));
  }
  COHORT_CHECK(bounds.back() == blocks, ConfigError, "parallel.partition adds up to ",
               bounds.back(), " blocks; the model has ", blocks);
  return bounds;
}

}  // namespace cohort::pipeline
