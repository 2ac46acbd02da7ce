// RunHistory: a run directory's metrics.jsonl read back, for `cohort report` and `cohort top`.
//
// Records after a restart repeat steps the killed run had already logged (it resumes from its
// last checkpoint): a step, summary or eval record whose step is not after the previous one drops
// the earlier records from that step on, so the curves show the run that counts. Every other
// record is kept as an event. A torn last line (a file still being written) is left for the next
// poll; lines that do not parse are counted in bad_lines.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cohort/monitor/step_metrics.hpp"
#include "cohort/monitor/summary.hpp"

namespace cohort::monitor {

struct StepPoint {
  std::int64_t step = 0;
  double t = 0, loss = 0, lr = 0, grad_norm = 0, seconds = 0;
  std::array<double, kPhases> phase{};
  std::int64_t samples = 0;
  bool timed = false;  // written with monitor.enabled (has the timing fields)
};

struct EvalPoint {
  std::int64_t step = 0;
  double loss = 0, accuracy = 0, perplexity = 0;
};

struct EventPoint {
  double t = 0;
  std::int64_t step = -1;  // -1: not tied to a step
  std::string kind;        // the record's "event"
  std::string text;        // its message, or a short description
  // Where the timeline places it: its step, else the step the log had reached (a start's own
  // events, logged before its first step: the step it started from).
  std::int64_t at = 0;
};

struct RunHistory {
  std::string dir;
  std::vector<nlohmann::json> runs;  // "run" records, one per start
  std::vector<StepPoint> steps;
  std::vector<Summary> summaries;
  std::vector<EvalPoint> evals;
  std::vector<EventPoint> events;
  nlohmann::json end;  // the last "end" record (null while running)
  std::int64_t bad_lines = 0;
  std::int64_t position = 0;  // the step the log has reached: the last step record's, or a start's

  std::int64_t total_steps() const;
  int ranks() const;
  std::vector<std::string> hosts() const;
  // Adds one record (a parsed line).
  void add(const nlohmann::json& record);
};

// Follows <dir>/metrics.jsonl: poll() reads what was appended since the last poll.
class RunFollower {
 public:
  explicit RunFollower(std::string dir);  // throws IoError when there is no metrics.jsonl
  bool poll();                            // true when records were added
  const RunHistory& history() const { return history_; }

 private:
  // Adds the whole lines of `chunk`; returns the bytes up to and including its last newline.
  std::size_t add_lines(const std::string& chunk, bool& added);

  std::string path_;
  std::uint64_t offset_ = 0;
  bool in_long_line_ = false;  // inside a line longer than a piece, skipped to its newline
  RunHistory history_;
};

RunHistory load_run(const std::string& dir);

}  // namespace cohort::monitor
