#include "svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace cohort::monitor::svg {
namespace {

constexpr double kW = 720, kH = 270, kLeft = 70, kRight = 20, kTop = 48, kBottom = 44;

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string label(double v) {
  char b[32];
  const double a = std::fabs(v);
  if (a >= 1e9)
    std::snprintf(b, sizeof b, "%.3gG", v / 1e9);
  else if (a >= 1e6)
    std::snprintf(b, sizeof b, "%.3gM", v / 1e6);
  else if (a >= 1e4)
    std::snprintf(b, sizeof b, "%.3gk", v / 1e3);
  else
    std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

constexpr int kMaxTicks = 24;  // tick_step() aims at five; more only from rounding

// Round tick step for a range: 1, 2 or 5 times a power of ten, about five ticks.
double tick_step(double span) {
  if (!(span > 0) || !std::isfinite(span)) return 1;
  const double raw = span / 5, power = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

struct Frame {
  double x0, x1, y0, y1;
  double px(double x) const { return kLeft + (x - x0) / (x1 - x0) * (kW - kLeft - kRight); }
  double py(double y) const { return kH - kBottom - (y - y0) / (y1 - y0) * (kH - kTop - kBottom); }
};

Frame frame_of(double x0, double x1, double y0, double y1) {
  // A flat range gets a width the values can resolve (x0 + 1 == x0 at 1e17).
  const auto widen = [](double lo) { return lo + std::max(1.0, std::abs(lo) * 1e-9); };
  if (!(x1 > x0)) x1 = widen(x0);
  if (!(y1 > y0)) y1 = widen(y0);
  const double step = tick_step(y1 - y0);
  return {x0, x1, std::floor(y0 / step) * step, std::ceil(y1 / step) * step};
}

std::string open(const std::string& id, const std::string& title) {
  return "<svg class=\"chart\" data-chart=\"" + id + "\" xmlns=\"http://www.w3.org/2000/svg\" " +
         "viewBox=\"0 0 " + num(kW) + " " + num(kH) + "\" width=\"" + num(kW) + "\" height=\"" +
         num(kH) + "\" role=\"img\"><title>" + escape(title) + "</title><text x=\"" + num(kLeft) +
         "\" y=\"20\" class=\"t\">" + escape(title) + "</text>";
}

std::string axes(const Frame& f, const std::string& x_label, const std::string& y_label,
                 bool x_ticks = true, bool y_ticks = true) {
  std::string s;
  const double ys = tick_step(f.y1 - f.y0);
  // Ticks by index, never by accumulation: a step below one ULP of the values (a flat series
  // at 1e17) would leave `y += ys` unchanged and loop for ever.
  for (int i = 0; y_ticks && i < kMaxTicks; ++i) {
    const double y = f.y0 + i * ys;
    if (y > f.y1 + ys / 2 || (i > 0 && y <= f.y0 + (i - 1) * ys)) break;
    s += "<line class=\"g\" x1=\"" + num(kLeft) + "\" x2=\"" + num(kW - kRight) + "\" y1=\"" +
         num(f.py(y)) + "\" y2=\"" + num(f.py(y)) + "\"/><text class=\"yl\" x=\"" + num(kLeft - 6) +
         "\" y=\"" + num(f.py(y) + 4) + "\">" + label(y) + "</text>";
  }
  if (x_ticks) {
    const double xs = tick_step(f.x1 - f.x0);
    const double first = std::ceil(f.x0 / xs) * xs;
    for (int i = 0; i < kMaxTicks; ++i) {
      const double x = first + i * xs;
      if (x > f.x1 + 1e-9 || (i > 0 && x <= first + (i - 1) * xs)) break;
      s += "<text class=\"xl\" x=\"" + num(f.px(x)) + "\" y=\"" + num(kH - kBottom + 16) + "\">" +
           label(x) + "</text>";
    }
  }
  s += "<line class=\"a\" x1=\"" + num(kLeft) + "\" x2=\"" + num(kLeft) + "\" y1=\"" + num(kTop) +
       "\" y2=\"" + num(kH - kBottom) + "\"/><line class=\"a\" x1=\"" + num(kLeft) + "\" x2=\"" +
       num(kW - kRight) + "\" y1=\"" + num(kH - kBottom) + "\" y2=\"" + num(kH - kBottom) + "\"/>";
  s += "<text class=\"xt\" x=\"" + num((kLeft + kW - kRight) / 2) + "\" y=\"" + num(kH - 8) +
       "\">" + escape(x_label) + "</text><text class=\"yt\" transform=\"translate(14," +
       num((kTop + kH - kBottom) / 2) + ") rotate(-90)\">" + escape(y_label) + "</text>";
  return s;
}

std::string legend(const std::vector<Series>& series) {
  std::string s;  // one row under the title, left to right
  double x = kLeft;
  for (const auto& ser : series) {
    s += "<rect x=\"" + num(x) + "\" y=\"27\" width=\"10\" height=\"10\" fill=\"" + ser.color +
         "\"/><text class=\"lg\" x=\"" + num(x + 14) + "\" y=\"36\">" + escape(ser.name) +
         "</text>";
    x += 14 + 6.5 * static_cast<double>(ser.name.size()) + 14;
  }
  return s;
}

}  // namespace

std::string escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string line_chart(const std::string& id, const std::string& title, const std::string& x_label,
                       const std::string& y_label, const std::vector<Series>& series,
                       bool from_zero) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const auto& s : series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(y)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (from_zero) {
    y0 = std::min(y0, 0.0);
  } else {
    const double margin = std::max((y1 - y0) * 0.1, 1e-3 * std::max(1.0, std::fabs(y1)));
    y0 -= margin, y1 += margin;
  }
  const Frame f = frame_of(x0, x1, y0, y1);
  std::string s = open(id, title) + axes(f, x_label, y_label);
  for (const auto& ser : series) {
    if (ser.dots) {
      for (const auto& [x, y] : ser.points) {
        if (!std::isfinite(y)) continue;
        s += "<circle cx=\"" + num(f.px(x)) + "\" cy=\"" + num(f.py(y)) + "\" r=\"3.5\" fill=\"" +
             ser.color + "\"><title>" + escape(ser.name) + " at " + label(x) + ": " + label(y) +
             "</title></circle>";
      }
      continue;
    }
    std::string pts;
    for (const auto& [x, y] : ser.points) {
      if (std::isfinite(y)) pts += num(f.px(x)) + "," + num(f.py(y)) + " ";
    }
    s += "<polyline fill=\"none\" stroke=\"" + ser.color + "\" stroke-width=\"1.6\" points=\"" +
         pts + "\"/>";
  }
  return s + legend(series) + "</svg>";
}

std::string stacked_bars(const std::string& id, const std::string& title,
                         const std::string& x_label, const std::string& y_label,
                         const std::vector<double>& xs, const std::vector<Series>& layers) {
  double top = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    double sum = 0;
    for (const auto& l : layers) sum += i < l.points.size() ? l.points[i].second : 0;
    top = std::max(top, sum);
  }
  const double x0 = xs.empty() ? 0 : xs.front(), x1 = xs.empty() ? 1 : xs.back();
  const double pad = xs.size() > 1 ? (x1 - x0) / static_cast<double>(xs.size() - 1) / 2 : 1;
  const Frame f = frame_of(x0 - pad, x1 + pad, 0, top);
  const double width = std::max(1.0, (kW - kLeft - kRight) / std::max<double>(xs.size(), 1) * 0.8);
  std::string s = open(id, title) + axes(f, x_label, y_label);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    double base = 0;
    for (const auto& l : layers) {
      const double v = i < l.points.size() ? l.points[i].second : 0;
      s += "<rect x=\"" + num(f.px(xs[i]) - width / 2) + "\" y=\"" + num(f.py(base + v)) +
           "\" width=\"" + num(width) + "\" height=\"" + num(f.py(base) - f.py(base + v)) +
           "\" fill=\"" + l.color + "\"><title>" + escape(l.name) + " at step " + label(xs[i]) +
           ": " + label(v) + "</title></rect>";
      base += v;
    }
  }
  return s + legend(layers) + "</svg>";
}

std::string bars(const std::string& id, const std::string& title, const std::string& y_label,
                 const std::vector<std::string>& labels, const std::vector<double>& values,
                 int highlight) {
  const double top = values.empty() ? 1 : *std::max_element(values.begin(), values.end());
  const Frame f = frame_of(0, std::max<double>(values.size(), 1), 0, top);
  const double slot = (kW - kLeft - kRight) / std::max<double>(values.size(), 1);
  std::string s = open(id, title) + axes(f, "rank", y_label, false);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double x = kLeft + slot * static_cast<double>(i) + slot * 0.1;
    s += "<rect x=\"" + num(x) + "\" y=\"" + num(f.py(values[i])) + "\" width=\"" +
         num(slot * 0.8) + "\" height=\"" + num(f.py(0) - f.py(values[i])) + "\" fill=\"" +
         (static_cast<int>(i) == highlight ? "#d62728" : "#1f77b4") + "\"><title>" +
         escape(labels[i]) + ": " + label(values[i]) + "</title></rect>";
    if (values.size() <= 32) {
      s += "<text class=\"xl\" x=\"" + num(x + slot * 0.4) + "\" y=\"" + num(kH - kBottom + 16) +
           "\">" + escape(labels[i]) + "</text>";
    }
  }
  return s + "</svg>";
}

std::string timeline(const std::string& id, const std::string& title, double x_max,
                     const std::vector<Mark>& marks) {
  std::map<std::string, int> rows;
  for (const auto& m : marks) rows.emplace(m.kind, 0);
  int row = 0;
  for (auto& [kind, r] : rows) r = row++;
  const Frame f{0, x_max > 0 ? x_max : 1, 0, 1};
  std::string s = open(id, title) + axes(f, "step", "", true, false);
  const double band = (kH - kTop - kBottom) / std::max<double>(rows.size(), 1);
  static const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                        "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  for (const auto& [kind, r] : rows) {
    s += "<text class=\"lg\" x=\"" + num(kLeft + 4) + "\" y=\"" + num(kTop + band * r + 12) +
         "\">" + escape(kind) + "</text>";
  }
  for (const auto& m : marks) {
    const int r = rows[m.kind];
    s += "<circle cx=\"" + num(f.px(std::max(0.0, m.x))) + "\" cy=\"" +
         num(kTop + band * r + band / 2) + "\" r=\"5\" fill=\"" + kColors[r % 8] + "\"><title>" +
         escape(m.kind + " at step " + label(m.x) + (m.text.empty() ? "" : ": " + m.text)) +
         "</title></circle>";
  }
  return s + "</svg>";
}

}  // namespace cohort::monitor::svg
