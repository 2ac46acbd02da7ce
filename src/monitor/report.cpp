#include "cohort/monitor/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "format.hpp"
#include "svg.hpp"

namespace cohort::monitor {
namespace {

const char* const kPhaseColors[kPhases] = {"#e377c2", "#1f77b4", "#ff7f0e", "#d62728",
                                           "#2ca02c", "#9467bd", "#7f7f7f"};

// At most `n` points: means of equal runs of consecutive points.
std::vector<std::pair<double, double>> thin(const std::vector<std::pair<double, double>>& p,
                                            std::size_t n) {
  if (p.size() <= n) return p;
  std::vector<std::pair<double, double>> out;
  const std::size_t k = (p.size() + n - 1) / n;
  for (std::size_t i = 0; i < p.size(); i += k) {
    double x = 0, y = 0;
    std::size_t m = 0;
    for (std::size_t j = i; j < std::min(p.size(), i + k); ++j, ++m)
      x += p[j].first, y += p[j].second;
    out.emplace_back(x / m, y / m);
  }
  return out;
}

std::string row(const std::string& key, const std::string& value) {
  return "<tr><th>" + svg::escape(key) + "</th><td>" + svg::escape(value) + "</td></tr>";
}

std::string overview(const RunHistory& h) {
  std::string s = "<table class=\"kv\">";
  const auto hosts = h.hosts();
  std::map<std::string, int> distinct;
  for (const auto& host : hosts) ++distinct[host];
  s += row("run directory", h.dir);
  s += row("ranks",
           std::to_string(h.ranks()) + " on " + std::to_string(distinct.size()) + " host(s)");
  s += row("starts", std::to_string(h.runs.size()));
  const std::int64_t last = h.steps.empty() ? 0 : h.steps.back().step;
  s += row("steps", std::to_string(last) + " of " + std::to_string(h.total_steps()));
  if (!h.steps.empty()) s += row("last loss", format("%.5g", h.steps.back().loss));
  if (!h.evals.empty()) {
    const auto& e = h.evals.back();
    s += row("last evaluation", "step " + std::to_string(e.step) + ": loss " +
                                    format("%.4g", e.loss) + ", accuracy " +
                                    format("%.4f", e.accuracy));
  }
  if (!h.summaries.empty()) {
    const auto& x = h.summaries.back();
    s += row("throughput (last summary)", format("%.1f samples/s", x.samples_per_s));
    if (x.model_flops_per_s > 0) s += row("model FLOP/s", format("%.3g", x.model_flops_per_s));
    if (x.mfu > 0) s += row("MFU", format("%.1f %%", 100 * x.mfu));
  }
  if (h.end.is_object()) {
    s += row("ended",
             h.end.value("stop_reason", "") + format(" after %.1f s", h.end.value("seconds", 0.0)));
  } else {
    s += row("ended", "not yet (running, or killed)");
  }
  if (h.bad_lines > 0) s += row("unreadable lines", std::to_string(h.bad_lines));
  return s + "</table>";
}

std::string curves(const RunHistory& h) {
  std::string s;
  svg::Series loss{"train loss", "#1f77b4", {}}, eval{"eval loss", "#d62728", {}, true};
  for (const auto& p : h.steps) loss.points.emplace_back(p.step, p.loss);
  loss.points = thin(loss.points, 1500);
  for (const auto& e : h.evals) eval.points.emplace_back(e.step, e.loss);
  s += svg::line_chart("loss", "Loss", "step", "loss", {loss, eval});
  if (!h.evals.empty()) {
    const bool lm = h.evals.back().perplexity > 0 && h.evals.back().accuracy == 0;
    svg::Series m{lm ? "perplexity" : "accuracy", "#2ca02c", {}, true};
    for (const auto& e : h.evals) m.points.emplace_back(e.step, lm ? e.perplexity : e.accuracy);
    s += svg::line_chart("eval", "Evaluation", "step", m.name, {m}, /*from_zero=*/false);
  }
  svg::Series thr{"samples/s", "#ff7f0e", {}};
  for (const auto& x : h.summaries) thr.points.emplace_back(x.step, x.samples_per_s);
  if (thr.points.empty()) {  // monitor.enabled was off: from the step records, if timed
    for (const auto& p : h.steps) {
      if (p.timed && p.seconds > 0) thr.points.emplace_back(p.step, p.samples / p.seconds);
    }
    thr.points = thin(thr.points, 1500);
  }
  return s + svg::line_chart("throughput", "Throughput (all ranks)", "step", "samples/s", {thr});
}

// One bar per summary (at most 120: every k-th), stacked by phase.
std::string breakdown(const RunHistory& h) {
  std::vector<double> xs;
  std::vector<svg::Series> layers;
  for (int p = 0; p < kPhases; ++p) layers.push_back({phase_name(p), kPhaseColors[p], {}});
  const std::size_t every = (h.summaries.size() + 119) / 120;
  for (std::size_t i = 0; i < h.summaries.size(); i += std::max<std::size_t>(every, 1)) {
    const auto& x = h.summaries[i];
    xs.push_back(static_cast<double>(x.step));
    for (int p = 0; p < kPhases; ++p) {
      layers[p].points.emplace_back(x.step, 1e3 * x.fields[static_cast<std::size_t>(1 + p)].mean);
    }
  }
  return svg::stacked_bars("breakdown", "Step time breakdown (mean over ranks)", "step",
                           "ms per step", xs, layers);
}

// Bandwidth and latency on axes of their own: GB/s and ms share no scale.
std::string communication(const RunHistory& h) {
  svg::Series bw{"bus bandwidth", "#9467bd", {}}, lat{"all-reduce latency", "#8c564b", {}};
  for (const auto& x : h.summaries) {
    bw.points.emplace_back(x.step, x[Field::kBusBandwidth].mean / 1e9);
    lat.points.emplace_back(x.step, 1e3 * x[Field::kAllreduceLatency].mean);
  }
  return svg::line_chart("comm", "Gradient all-reduce bus bandwidth", "step", "GB/s", {bw}) +
         svg::line_chart("latency", "Gradient all-reduce latency", "step", "ms", {lat});
}

std::string per_rank(const RunHistory& h) {
  std::vector<double> busy;
  std::vector<std::string> names;
  for (const auto& x : h.summaries) {
    if (busy.size() < x.rank_busy.size()) busy.resize(x.rank_busy.size(), 0);
    for (std::size_t r = 0; r < x.rank_busy.size(); ++r) {
      busy[r] += 1e3 * x.rank_busy[r] / static_cast<double>(h.summaries.size());
    }
  }
  for (std::size_t r = 0; r < busy.size(); ++r) names.push_back("r" + std::to_string(r));
  const int slowest =
      busy.empty() ? -1
                   : static_cast<int>(std::max_element(busy.begin(), busy.end()) - busy.begin());
  return svg::bars("ranks", "Per-rank busy time (step minus exposed communication), mean",
                   "ms per step", names, busy, slowest);
}

std::string events_chart(const RunHistory& h) {
  std::vector<svg::Mark> marks;
  double x_max = static_cast<double>(h.total_steps());
  for (const auto& e : h.events) {
    const double x = static_cast<double>(e.at);
    x_max = std::max(x_max, x);
    marks.push_back({x, e.kind, e.text});
  }
  return svg::timeline("events", "Events", x_max, marks);
}

std::string charts(const RunHistory& h) {
  return curves(h) + breakdown(h) + communication(h) + per_rank(h) + events_chart(h);
}

}  // namespace

std::vector<Finding> rediagnose(const RunHistory& h, const Thresholds& thresholds) {
  Diagnoser d(thresholds, h.hosts());
  std::vector<Finding> out;
  for (const auto& x : h.summaries) {
    for (auto& f : d.observe(x)) out.push_back(std::move(f));
  }
  for (const auto& e : h.events) {
    if (e.kind == "diagnosis" && e.text.rfind("divergence: the loss is", 0) == 0) {
      out.push_back({"divergence", e.text, e.step, -1});
    }
  }
  // Host names and event text come from the run's files; the findings go to terminals.
  for (auto& f : out) f.message = printable(f.message);
  return out;
}

nlohmann::json report_json(const std::string& report, const RunHistory& history,
                           const std::vector<Finding>& findings) {
  nlohmann::json j = {{"report", report},
                      {"steps", history.steps.empty() ? 0 : history.steps.back().step},
                      {"summaries", history.summaries.size()},
                      {"events", history.events.size()},
                      {"bad_lines", history.bad_lines},
                      {"findings", nlohmann::json::array()}};
  for (const auto& f : findings) j["findings"].push_back(to_json(f));
  return j;
}

std::string render_report(const RunHistory& h, const Thresholds& thresholds,
                          const std::vector<EvalRecord>& evaluations) {
  std::string s =
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Cohort report: " +
      svg::escape(h.dir) +
      "</title><style>body{font:14px sans-serif;margin:24px;color:#222;max-width:760px}"
      "h1{font-size:20px}h2{font-size:16px;margin-top:28px}table.kv th{text-align:left;"
      "padding-right:16px;font-weight:600}svg.chart{display:block;margin:12px 0;background:#fff;"
      "border:1px solid #ddd}.t{font-size:14px;font-weight:600}.xl,.yl,.lg,.xt,.yt{font-size:11px}"
      ".yl{text-anchor:end}.xl,.xt,.yt{text-anchor:middle}.g{stroke:#eee}.a{stroke:#555}"
      "li{margin:4px 0}.none{color:#2ca02c}table.confusion td,table.classes td{text-align:right;"
      "padding:2px 6px}table.confusion{border-collapse:collapse;font-size:12px}h3{font-size:14px}"
      "</style></head><body>\n<h1>Cohort training "
      "report</h1>\n" +
      overview(h) + "\n<h2>Diagnosis</h2>\n<ul id=\"diagnosis\">";
  const auto findings = rediagnose(h, thresholds);
  for (const auto& f : findings) s += "<li>" + svg::escape(f.message) + "</li>";
  if (findings.empty())
    s += "<li class=\"none\">no rule fired: nothing limits this run unduly</li>";
  s += "</ul>\n<h2>Charts</h2>\n" + charts(h) + render_evaluations(evaluations) +
       "\n<h2>Events</h2>\n<ul id=\"events\">";
  for (const auto& e : h.events) {
    s += "<li>" + svg::escape(e.kind) + (e.step >= 0 ? " at step " + std::to_string(e.step) : "") +
         (e.text.empty() ? "" : ": " + svg::escape(e.text)) + "</li>";
  }
  s += "</ul>\n<script>document.body.setAttribute('data-charts',"
       "String(document.querySelectorAll('svg.chart').length));</script>\n</body></html>\n";
  return s;
}

}  // namespace cohort::monitor
