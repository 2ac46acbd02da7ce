// Diagnosis: rules over the cross-rank summaries, each finding said in one plain sentence with
// its evidence. The trainer runs them at every summary; `cohort report` runs them again over the
// summaries in metrics.jsonl, so both say the same.
//
// Rules (thresholds from the [monitor] config section):
//  - data-bound: the ranks wait for data for at least data_bound_fraction of the step (mean over
//    ranks), or the GPUs are busy less than gpu_util_low percent of the time.
//  - comm-bound: even the rank that waits least spends comm_bound_fraction of its step in exposed
//    communication (a straggler makes the others wait; that is the straggler rule's finding).
//  - straggler: the same rank's busy time (step minus exposed communication) exceeds the median
//    rank's by straggler_margin in straggler_windows summaries in a row.
//  - divergence: the loss is not finite, or its window mean rose in each of divergence_windows
//    summaries in a row, by divergence_rise in all and by at least 1% of the first summary's.
// The first summary (a start's warm-up) gets no data- or comm-bound verdict.
// observe() returns the findings that start with this summary: a rule that keeps firing is said
// once, and again only after it has cleared (or, for a straggler, when another rank is named).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "cohort/monitor/summary.hpp"

namespace cohort::monitor {

struct Thresholds {
  double data_bound_fraction = 0.25;
  double gpu_util_low = 50;
  double comm_bound_fraction = 0.30;
  double straggler_margin = 0.20;
  int straggler_windows = 3;
  int divergence_windows = 3;
  double divergence_rise = 0.20;
  double cpu_contention =
      1.5;  // host load per core from which timings are the host's, not the run's
};

struct Finding {
  std::string rule;  // "cpu-contention", "data-bound", "comm-bound", "straggler", "divergence"
  std::string message;
  std::int64_t step = 0;
  int rank = -1;  // the straggler
};

// One of `cohort report --json`'s "findings": rule, step, rank, message.
nlohmann::json to_json(const Finding& finding);

class Diagnoser {
 public:
  // `hosts[r]`: rank r's host, for naming a straggler (may be empty).
  explicit Diagnoser(Thresholds thresholds, std::vector<std::string> hosts = {});
  std::vector<Finding> observe(const Summary& summary);
  // The rules firing at the last summary, by name and as bits of kRules (for share()).
  std::vector<std::string> active() const;
  std::uint32_t active_flags() const;
  static std::vector<std::string> rules_of(std::uint32_t flags);
  static constexpr const char* kRules[] = {"data-bound", "comm-bound", "straggler", "divergence",
                                           "cpu-contention"};
  // The finding for a loss that is not finite (NaN or Inf) at `step`.
  static Finding non_finite_loss(std::int64_t step, double loss);

 private:
  void fire(std::vector<Finding>& out, const std::string& rule, bool firing, Finding finding);
  bool cpu_rule(const Summary& s, std::vector<Finding>& out);  // true: the host is contended
  void data_rule(const Summary& s, bool warm, std::vector<Finding>& out);
  void comm_rule(const Summary& s, bool warm, std::vector<Finding>& out);
  void straggler_rule(const Summary& s, std::vector<Finding>& out);
  void divergence_rule(const Summary& s, std::vector<Finding>& out);
  std::string rank_name(int rank) const;

  Thresholds t_;
  std::vector<std::string> hosts_;
  std::map<std::string, bool> active_;
  int straggler_ = -1, straggler_streak_ = 0;
  std::int64_t observed_ = 0;  // summaries seen
  std::deque<double> losses_;
  double initial_loss_ = 0;  // the first summary's
};

}  // namespace cohort::monitor
