// Where metrics go (docs/formats/metrics.md describes each format):
//  - JsonlSink: <run_dir>/metrics.jsonl, one JSON object per line, every one with "event" and
//    "t" (Unix time, seconds); thread-safe (the watchdog's thread writes its event too). Records
//    are flushed at once, except step records: those are flushed at least once a second (and
//    with the next record of any other kind), so that a fast step does not pay a system call.
//  - Prometheus text: metric_samples() turns a summary into gauges; prometheus_text() renders
//    them in the text exposition format; the monitor replaces the textfile through
//    io::write_file_atomically (a temporary in the same directory, then rename), the way
//    node_exporter's textfile collector needs, so a scrape never sees half a file.
//  - ConsoleSink: rank 0's console. On a terminal, one progress line redrawn in place (step/total,
//    ETA, loss, throughput); otherwise (Slurm's output files) plain grep-friendly lines every
//    train.log_every steps. Other lines (evaluations, events) go through line(), which clears the
//    progress line first.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cohort/io/output.hpp"
#include "cohort/monitor/step_metrics.hpp"
#include "cohort/monitor/summary.hpp"

namespace cohort::monitor {

constexpr int kMetricsSchemaVersion = 1;

class JsonlSink {
 public:
  // Opens `path` (an io::RunFile: never through a link) for appending (`append`) or anew. Throws
  // IoError when it cannot.
  JsonlSink(const std::string& path, bool append);
  ~JsonlSink();  // writes what write_step() still holds
  JsonlSink(const JsonlSink&) = delete;
  JsonlSink& operator=(const JsonlSink&) = delete;
  void write(nlohmann::json record);  // adds "t" when absent; one line, flushed
  // A step record, formatted without nlohmann (a step record per millisecond-step must cost
  // microseconds): `fields` are (key, value) pairs; non-finite values are written as null.
  void write_step(const std::vector<std::pair<const char*, double>>& fields);

 private:
  void write_pending();  // under mutex_

  std::mutex mutex_;
  io::RunFile file_;
  std::string pending_;  // step records not yet written (at most a second's)
  std::string line_;
  std::chrono::steady_clock::time_point flushed_{};
};

struct MetricSample {
  std::string name;
  std::string help;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Gauges for one summary; `labels` go on every sample (job, run); `ranks`: the per-rank busy
// times to export (the job's textfile: every rank; a node's endpoint: its node's ranks).
std::vector<MetricSample> metric_samples(const Summary& summary, std::int64_t total_steps,
                                         const std::map<std::string, std::string>& labels,
                                         const std::vector<std::string>& active_rules,
                                         const std::vector<RankTime>& ranks);
std::string prometheus_text(const std::vector<MetricSample>& samples);

enum class ConsoleMode { kAuto, kBar, kLines };

class ConsoleSink {
 public:
  ConsoleSink(std::FILE* out, ConsoleMode mode, std::int64_t total_steps, std::int64_t log_every);
  ~ConsoleSink();
  // Every step on rank 0; `data_wait` is the step's data-wait share (0..1).
  void step(const StepSample& sample, double samples_per_s, double data_wait);
  void line(const std::string& text);
  bool bar() const { return bar_; }

 private:
  void clear();
  std::FILE* out_;
  bool bar_;
  std::int64_t total_, log_every_;
  double step_ema_ = 0;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point drawn_at_{};
};

}  // namespace cohort::monitor
