// render_top: one frame of `cohort top`, plain text (the caller clears the terminal).
#include <algorithm>
#include <cstdio>
#include <map>

#include "cohort/monitor/report.hpp"
#include "format.hpp"

namespace cohort::monitor {
namespace {

std::string duration(double s) {
  const long long t = static_cast<long long>(s);
  char b[48];
  if (t >= 3600)
    std::snprintf(b, sizeof b, "%lldh%02lldm", t / 3600, t / 60 % 60);
  else
    std::snprintf(b, sizeof b, "%lldm%02llds", t / 60, t % 60);
  return b;
}

std::string clip(std::string line, int width) {
  line = printable(line);  // every line of the frame: file text never reaches the terminal raw
  if (width > 0 && static_cast<int>(line.size()) > width)
    line.resize(static_cast<std::size_t>(width));
  return line + "\n";
}

// The run, its ranks and hosts, the job and which start this is.
std::string header(const RunHistory& h, int width) {
  std::string out;
  const auto hosts = h.hosts();
  std::map<std::string, int> distinct;
  for (const auto& host : hosts) ++distinct[host];
  std::string job = h.runs.empty() ? "" : h.runs.back().value("job_id", "");
  out +=
      clip("cohort top  " + h.dir + "  (" + std::to_string(h.ranks()) + " ranks on " +
               std::to_string(distinct.size()) + " host(s)" + (job.empty() ? "" : ", job " + job) +
               ", start " + std::to_string(h.runs.size()) + ")",
           width);
  return out;
}

// Progress bar, ETA (or how it ended), loss, and how fresh the file is.
std::string progress(const RunHistory& h, double now, int width) {
  std::string out;
  const auto& last = h.steps.back();
  const std::int64_t total = std::max<std::int64_t>(h.total_steps(), 1);
  const int bar = 30,
            done = static_cast<int>(bar * std::min<std::int64_t>(last.step, total) / total);
  double step_s = last.seconds;
  if (!h.summaries.empty()) step_s = h.summaries.back()[Field::kStep].mean;
  const double eta = step_s * static_cast<double>(total - last.step);
  out += clip("step " + std::to_string(last.step) + "/" + std::to_string(total) + " [" +
                  std::string(static_cast<std::size_t>(done), '#') +
                  std::string(static_cast<std::size_t>(bar - done), '.') + "] " +
                  format("%.0f%%", 100.0 * last.step / total) +
                  (h.end.is_object() ? "  finished: " + h.end.value("stop_reason", "")
                                     : "  ETA " + duration(eta)) +
                  format("  loss %.4f  lr %.3g", last.loss, last.lr) +
                  format("  updated %.0f s ago", std::max(0.0, now - last.t)),
              width);
  return out;
}

// The latest summary: throughput, step split, all-reduce, CPU/GPU, busy time per rank.
std::string summary_lines(const Summary& s, int width) {
  std::string out;
  std::string phases = format("step %.1f ms:", 1e3 * s[Field::kStep].mean);
  for (int p = 0; p < kPhases; ++p) {
    phases += std::string(" ") + phase_name(p) +
              format(" %.0f%%", 100 * s.fields[static_cast<std::size_t>(1 + p)].mean /
                                    std::max(s[Field::kStep].mean, 1e-12));
  }
  out += clip(format("throughput %.1f samples/s", s.samples_per_s) +
                  (s.tokens_per_s > 0 ? format(", %.0f tokens/s", s.tokens_per_s) : "") +
                  (s.mfu > 0 ? format(", MFU %.1f%%", 100 * s.mfu) : "") + "   " + phases,
              width);
  out +=
      clip(format("all-reduce %.1f/step, %.2f MB/step", s[Field::kAllreduceCount].mean,
                  s[Field::kAllreduceBytes].mean / 1e6) +
               format(", latency %.2f ms, bus bw %.2f GB/s", 1e3 * s[Field::kAllreduceLatency].mean,
                      s[Field::kBusBandwidth].mean / 1e9),
           width);
  out += clip(format("cpu %.2f cores/rank, rss max %.0f MB", s[Field::kCpuUtil].mean,
                     s[Field::kRssBytes].max / 1e6) +
                  (s.gpu ? format("   gpu %.0f%%, %.0f W", s[Field::kGpuUtil].mean,
                                  s[Field::kGpuPowerWatts].mean)
                         : "   gpu -"),
              width);
  std::string ranks = "busy ms by rank:";
  for (std::size_t r = 0; r < s.rank_busy.size() && r < 16; ++r) {
    ranks += format(" r%.0f %.1f", static_cast<double>(r), 1e3 * s.rank_busy[r]) +
             (static_cast<int>(r) == s.slowest_rank ? "*" : "");
  }
  if (s.rank_busy.size() > 16) ranks += " ... (* slowest: r" + std::to_string(s.slowest_rank) + ")";
  out += clip(ranks, width);
  return out;
}

}  // namespace

std::string render_top(const RunHistory& h, const Thresholds& thresholds, double now, int width) {
  std::string out = header(h, width);
  if (h.steps.empty()) return out + "waiting for the first step...\n";
  out += progress(h, now, width);
  if (!h.summaries.empty()) out += summary_lines(h.summaries.back(), width);
  for (const auto& f : rediagnose(h, thresholds)) out += clip("diagnosis: " + f.message, width);
  const std::size_t from = h.events.size() > 5 ? h.events.size() - 5 : 0;
  for (std::size_t i = from; i < h.events.size(); ++i) {
    const auto& e = h.events[i];
    out += clip("event " + e.kind + (e.step >= 0 ? " at step " + std::to_string(e.step) : "") +
                    (e.text.empty() ? "" : ": " + e.text),
                width);
  }
  return out;
}

}  // namespace cohort::monitor
