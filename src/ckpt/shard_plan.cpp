#include "cohort/ckpt/shard_plan.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "cohort/error.hpp"

namespace cohort::ckpt {

std::int64_t TensorSpec::numel() const {
  std::int64_t n = 1;
  for (const auto d : shape) n *= d;
  return n;
}

ShardPlan ShardPlan::balanced(std::vector<TensorSpec> tensors, int world) {
  COHORT_CHECK(world >= 1, ConfigError, "checkpoint plan: world size must be >= 1, not ", world);
  std::set<std::string> names;
  std::int64_t total = 0;
  for (const auto& t : tensors) {
    COHORT_CHECK(names.insert(t.name).second, ConfigError, "checkpoint plan: tensor '", t.name,
                 "' appears twice");
    COHORT_CHECK(t.element_bytes >= 1, ConfigError, "checkpoint plan: tensor '", t.name,
                 "' has element size ", t.element_bytes);
    for (const auto d : t.shape) {
      COHORT_CHECK(d >= 0, ConfigError, "checkpoint plan: tensor '", t.name,
                   "' has a negative dimension");
    }
    total += t.numel() * t.element_bytes;
  }
  ShardPlan plan;
  plan.world_ = world;
  plan.tensors_ = std::move(tensors);
  // Walk the tensors in order; rank r owns the elements that start in the bytes
  // [r * total / world, (r + 1) * total / world): contiguous, so at most one slice per tensor.
  std::int64_t base = 0;  // bytes before the current tensor
  int rank = 0;
  for (std::size_t i = 0; i < plan.tensors_.size(); ++i) {
    const TensorSpec& t = plan.tensors_[i];
    const std::int64_t n = t.numel();
    std::int64_t at = 0;  // next element of this tensor to assign
    while (at < n) {
      while (rank + 1 < world && base + at * t.element_bytes >= (rank + 1) * total / world) ++rank;
      std::int64_t end = n;
      if (rank + 1 < world) {
        const std::int64_t cut = (rank + 1) * total / world;  // the next rank's first byte
        // Elements starting before the cut; more than `at`, since element `at` starts before it.
        end = std::min(n, (cut - base + t.element_bytes - 1) / t.element_bytes);
      }
      plan.slices_.push_back({i, rank, at, end - at});
      at = end;
    }
    base += n * t.element_bytes;
  }
  return plan;
}

ShardPlan ShardPlan::among_holders(std::vector<TensorSpec> tensors,
                                   const std::vector<std::vector<int>>& holders, int world) {
  COHORT_CHECK(holders.size() == tensors.size(), ConfigError, "checkpoint plan: holders for ",
               holders.size(), " of ", tensors.size(), " tensors");
  ShardPlan plan = balanced(tensors, world);  // validates the specs; its slices are replaced
  std::map<std::vector<int>, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    COHORT_CHECK(!holders[i].empty(), ConfigError, "checkpoint plan: no rank holds '",
                 tensors[i].name, "'");
    for (const int r : holders[i]) {
      COHORT_CHECK(r >= 0 && r < world, ConfigError, "checkpoint plan: rank ", r,
                   " outside the world of ", world);
    }
    groups[holders[i]].push_back(i);
  }
  plan.slices_.clear();
  for (const auto& [ranks, members] : groups) {
    std::vector<TensorSpec> part;
    for (const auto i : members) part.push_back(tensors[i]);
    const ShardPlan sub = balanced(std::move(part), static_cast<int>(ranks.size()));
    for (const auto& s : sub.slices()) {
      plan.slices_.push_back(
          {members[s.tensor], ranks[static_cast<std::size_t>(s.rank)], s.offset, s.count});
    }
  }
  std::sort(plan.slices_.begin(), plan.slices_.end(), [](const Slice& a, const Slice& b) {
    return a.tensor != b.tensor ? a.tensor < b.tensor : a.offset < b.offset;
  });
  return plan;
}

namespace {

bool whole(const TensorSpec& t, const std::vector<Holding>& held) {
  return std::all_of(held.begin(), held.end(),
                     [&](const Holding& h) { return h.offset == 0 && h.count == t.numel(); });
}

// Tensor `i` held in parts: cut at every holding's ends; each piece to the first rank holding it.
void plan_parts(std::size_t i, const TensorSpec& t, const std::vector<Holding>& held, int world,
                std::vector<Slice>& out) {
  std::set<std::int64_t> cuts{0, t.numel()};
  for (const auto& h : held) {
    COHORT_CHECK(h.rank >= 0 && h.rank < world, ConfigError, "checkpoint plan: rank ", h.rank,
                 " outside the world of ", world);
    COHORT_CHECK(h.offset >= 0 && h.count >= 0 && h.offset <= t.numel() - h.count, ConfigError,
                 "checkpoint plan: rank ", h.rank, " holds elements [", h.offset, ", +", h.count,
                 ") of '", t.name, "', which has ", t.numel());
    cuts.insert(h.offset);
    cuts.insert(h.offset + h.count);
  }
  for (auto at = cuts.begin(); std::next(at) != cuts.end(); ++at) {
    const std::int64_t begin = *at, end = *std::next(at);
    int writer = -1;
    for (const auto& h : held) {
      if (h.offset <= begin && end <= h.offset + h.count && (writer < 0 || h.rank < writer)) {
        writer = h.rank;
      }
    }
    COHORT_CHECK(writer >= 0, ConfigError, "checkpoint plan: no rank holds elements [", begin, ", ",
                 end, ") of '", t.name, "'");
    // Neighbouring pieces of one writer make one slice.
    if (!out.empty() && out.back().tensor == i && out.back().rank == writer) {
      out.back().count += end - begin;
    } else {
      out.push_back({i, writer, begin, end - begin});
    }
  }
}

}  // namespace

ShardPlan ShardPlan::among_holdings(std::vector<TensorSpec> tensors,
                                    const std::vector<std::vector<Holding>>& holdings, int world) {
  COHORT_CHECK(holdings.size() == tensors.size(), ConfigError, "checkpoint plan: holdings for ",
               holdings.size(), " of ", tensors.size(), " tensors");
  ShardPlan plan = balanced(tensors, world);  // validates the specs; its slices are replaced
  plan.slices_.clear();
  std::vector<TensorSpec> whole_held;
  std::vector<std::vector<int>> holders;
  std::vector<std::size_t> index;  // whole_held's -> tensors'
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    COHORT_CHECK(!holdings[i].empty(), ConfigError, "checkpoint plan: no rank holds '",
                 tensors[i].name, "'");
    if (!whole(tensors[i], holdings[i])) {
      plan_parts(i, tensors[i], holdings[i], world, plan.slices_);
      continue;
    }
    whole_held.push_back(tensors[i]);
    index.push_back(i);
    holders.emplace_back();
    for (const auto& h : holdings[i]) holders.back().push_back(h.rank);
  }
  if (!whole_held.empty()) {
    const ShardPlan sub = among_holders(std::move(whole_held), holders, world);
    for (const auto& s : sub.slices()) {
      plan.slices_.push_back({index[s.tensor], s.rank, s.offset, s.count});
    }
  }
  std::sort(plan.slices_.begin(), plan.slices_.end(), [](const Slice& a, const Slice& b) {
    return a.tensor != b.tensor ? a.tensor < b.tensor : a.offset < b.offset;
  });
  return plan;
}

std::vector<Slice> ShardPlan::slices_of(int rank) const {
  std::vector<Slice> mine;
  for (const auto& s : slices_) {
    if (s.rank == rank) mine.push_back(s);
  }
  return mine;
}

std::int64_t ShardPlan::bytes_of(int rank) const {
  std::int64_t bytes = 0;
  for (const auto& s : slices_) {
    if (s.rank == rank) bytes += s.count * tensors_[s.tensor].element_bytes;
  }
  return bytes;
}

std::vector<Overlap> overlaps(const std::vector<Slice>& stored, std::size_t tensor,
                              std::int64_t offset, std::int64_t count) {
  std::vector<Overlap> result;
  for (std::size_t i = 0; i < stored.size(); ++i) {
    const Slice& s = stored[i];
    if (s.tensor != tensor) continue;
    const std::int64_t begin = std::max(s.offset, offset);
    const std::int64_t end = std::min(s.offset + s.count, offset + count);
    if (begin < end) result.push_back({i, begin - s.offset, begin - offset, end - begin});
  }
  return result;
}

}  // namespace cohort::ckpt
