#include "cohort/monitor/diagnosis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/stats.hpp"
#include "format.hpp"

namespace cohort::monitor {
namespace {

std::string steps(const Summary& s) {
  return "steps " + std::to_string(s.first_step) + "-" + std::to_string(s.step);
}

}  // namespace

nlohmann::json to_json(const Finding& f) {
  return {{"rule", f.rule}, {"step", f.step}, {"rank", f.rank}, {"message", f.message}};
}

Diagnoser::Diagnoser(Thresholds thresholds, std::vector<std::string> hosts)
    : t_(thresholds), hosts_(std::move(hosts)) {}

std::string Diagnoser::rank_name(int rank) const {
  std::string name = "rank " + std::to_string(rank);
  if (rank >= 0 && rank < static_cast<int>(hosts_.size()) && !hosts_[rank].empty()) {
    name += " (" + hosts_[static_cast<std::size_t>(rank)] + ")";
  }
  return name;
}

void Diagnoser::fire(std::vector<Finding>& out, const std::string& rule, bool firing,
                     Finding finding) {
  bool& was = active_[rule];
  if (firing && !was) {
    finding.rule = rule;
    out.push_back(std::move(finding));
  }
  was = firing;
}

std::vector<std::string> Diagnoser::active() const { return rules_of(active_flags()); }

std::uint32_t Diagnoser::active_flags() const {
  std::uint32_t flags = 0;
  for (std::size_t i = 0; i < std::size(kRules); ++i) {
    const auto it = active_.find(kRules[i]);
    if (it != active_.end() && it->second) flags |= 1u << i;
  }
  return flags;
}

std::vector<std::string> Diagnoser::rules_of(std::uint32_t flags) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < std::size(kRules); ++i) {
    if (flags & (1u << i)) out.emplace_back(kRules[i]);
  }
  return out;
}

Finding Diagnoser::non_finite_loss(std::int64_t step, double loss) {
  Finding f;
  f.rule = "divergence";
  f.step = step;
  f.message = "divergence: the loss is " + std::string(std::isnan(loss) ? "NaN" : "infinite") +
              " at step " + std::to_string(step) +
              "; lower optim.lr, add warmup (optim.warmup_steps) or clip (optim.clip_norm)";
  return f;
}

std::vector<Finding> Diagnoser::observe(const Summary& s) {
  std::vector<Finding> out;
  // The first summary of a start holds its warm-up (the first batch read cold, first
  // collectives): no data- or comm-bound verdict on it.
  const bool warm = ++observed_ > 1;
  // A host whose CPUs other work holds makes every phase slow and any rank late: checked first,
  // and while it holds, no verdict that would blame the input, the network or one rank.
  if (cpu_rule(s, out)) {
    for (const char* rule : {"data-bound", "comm-bound", "straggler"}) active_[rule] = false;
    straggler_ = -1;
    straggler_streak_ = 0;
  } else {
    data_rule(s, warm, out);
    comm_rule(s, warm, out);
    straggler_rule(s, out);
  }
  divergence_rule(s, out);
  return out;
}

bool Diagnoser::cpu_rule(const Summary& s, std::vector<Finding>& out) {
  const FieldStats& load = s[Field::kHostLoad];
  const double cores = s[Field::kHostCores].min;  // 0: a log without the field
  const bool contended = cores > 0 && load.max >= t_.cpu_contention * cores;
  Finding f;
  f.step = s.step;
  f.rank = load.max_rank;
  f.message = format("cpu-contention: %.1f runnable on %.0f cores", load.max, cores) + " (" +
              rank_name(load.max_rank) + "'s host, load over the last minute) at " + steps(s) +
              format("; the ranks ran on %.2f core(s) each", s[Field::kCpuUtil].mean) +
              ": other work (or more threads than cores: train.threads) shares these CPUs, so "
              "timings are the host's: no data-bound, comm-bound or straggler verdict meanwhile";
  fire(out, "cpu-contention", contended, f);
  return contended;
}

void Diagnoser::data_rule(const Summary& s, bool warm, std::vector<Finding>& out) {
  const double step = std::max(s[Field::kStep].mean, 1e-12);
  const double data = s[Field::kData].mean / step;
  const bool gpu_idle = s.gpu && s[Field::kGpuUtil].mean < t_.gpu_util_low;
  Finding f;
  f.step = s.step;
  if (data >= t_.data_bound_fraction) {
    f.message = format("data-bound: ranks wait for input %.0f%% of each step (%.1f of %.1f ms)",
                       100 * data, 1e3 * s[Field::kData].mean, 1e3 * step) +
                " at " + steps(s) +
                "; the input pipeline is slower than compute: raise data.prefetch, use a faster "
                "filesystem (cohort data stage) or fewer ranks per node";
  } else if (gpu_idle) {
    f.message = format("data-bound: GPU utilisation is %.0f%% (below %.0f%%) with data wait %.0f%%",
                       s[Field::kGpuUtil].mean, t_.gpu_util_low, 100 * data) +
                " at " + steps(s) + "; the GPUs are starved: check the input pipeline";
  }
  fire(out, "data-bound", warm && (data >= t_.data_bound_fraction || gpu_idle), f);
}

void Diagnoser::comm_rule(const Summary& s, bool warm, std::vector<Finding>& out) {
  const double step = std::max(s[Field::kStep].mean, 1e-12);
  const FieldStats& comm = s[Field::kComm];
  const double least = comm.min / step;
  Finding f;
  f.step = s.step;
  f.message = format(
                  "comm-bound: exposed communication takes %.0f%% of each step on every rank "
                  "(%.1f ms of %.1f ms at least)",
                  100 * least, 1e3 * comm.min, 1e3 * step) +
              " at " + steps(s) +
              "; overlap it (parallel.overlap), use larger buckets (parallel.bucket_mb) or "
              "larger batches";
  fire(out, "comm-bound", warm && s.ranks > 1 && least >= t_.comm_bound_fraction, f);
}

void Diagnoser::straggler_rule(const Summary& s, std::vector<Finding>& out) {
  const double mid = stats::interpolated_median(s.rank_busy);
  const int slow = s.slowest_rank;
  const double busy = slow < static_cast<int>(s.rank_busy.size()) ? s.rank_busy[slow] : 0;
  const bool slower = s.ranks > 1 && mid > 0 && busy > mid * (1 + t_.straggler_margin);
  straggler_streak_ = slower ? (slow == straggler_ ? straggler_streak_ + 1 : 1) : 0;
  if (slower && slow != straggler_) active_["straggler"] = false;  // a new rank is named
  straggler_ = slower ? slow : -1;
  Finding f;
  f.step = s.step;
  f.rank = slow;
  f.message = "straggler: " + rank_name(slow) +
              format(" is %.0f%% slower than the median rank (busy %.1f ms vs %.1f ms per step)",
                     100 * (busy / std::max(mid, 1e-12) - 1), 1e3 * busy, 1e3 * mid) +
              " over " + std::to_string(straggler_streak_) + " summaries to step " +
              std::to_string(s.step) +
              "; every other rank waits for it: check that node (cohort env --all-ranks, its load)";
  fire(out, "straggler", straggler_streak_ >= t_.straggler_windows, f);
}

void Diagnoser::divergence_rule(const Summary& s, std::vector<Finding>& out) {
  if (!std::isfinite(s.last_loss) || !std::isfinite(s.loss)) {
    fire(out, "divergence", true,
         non_finite_loss(s.step, std::isfinite(s.last_loss) ? s.loss : s.last_loss));
    return;
  }
  if (losses_.empty() && initial_loss_ == 0) initial_loss_ = std::fabs(s.loss);
  losses_.push_back(s.loss);
  while (static_cast<int>(losses_.size()) > t_.divergence_windows + 1) losses_.pop_front();
  bool rising = static_cast<int>(losses_.size()) == t_.divergence_windows + 1;
  for (std::size_t i = 1; rising && i < losses_.size(); ++i) rising = losses_[i] > losses_[i - 1];
  // Relative rise, and at least 1% of where the run started: noise on a loss near zero is not
  // divergence.
  rising = rising && losses_.back() >= losses_.front() * (1 + t_.divergence_rise) &&
           losses_.back() - losses_.front() >= 0.01 * initial_loss_;
  Finding f;
  f.step = s.step;
  f.message = format(
                  "divergence: the loss rose in each of the last %.0f summaries, from %.4g to "
                  "%.4g",
                  t_.divergence_windows, losses_.front(), losses_.back()) +
              " (to step " + std::to_string(s.step) +
              "); lower optim.lr, add warmup (optim.warmup_steps) or clip (optim.clip_norm)";
  fire(out, "divergence", rising, f);
}

}  // namespace cohort::monitor
