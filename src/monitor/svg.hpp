// Small SVG charts for the HTML report: self-contained markup, no script, no external resource.
// Each chart is an <svg class="chart" data-chart="NAME"> with a title, axes with round ticks, and
// a legend; points carry <title> tooltips where useful.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cohort::monitor::svg {

struct Series {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;  // (x, y)
  bool dots = false;                              // markers instead of a line
};

std::string escape(const std::string& text);

// Lines (or dots) over a shared x axis.
// The y axis starts at 0 (from_zero) or fits the data with a margin (an accuracy between 0.95
// and 0.97 is a flat line on an axis from 0).
std::string line_chart(const std::string& id, const std::string& title, const std::string& x_label,
                       const std::string& y_label, const std::vector<Series>& series,
                       bool from_zero = true);

// Stacked bars: one bar per x, `layers[i]` gives each bar's layer i (same length as `xs`).
std::string stacked_bars(const std::string& id, const std::string& title,
                         const std::string& x_label, const std::string& y_label,
                         const std::vector<double>& xs, const std::vector<Series>& layers);

// Bars per category (ranks); `highlight` is drawn in red (-1: none).
std::string bars(const std::string& id, const std::string& title, const std::string& y_label,
                 const std::vector<std::string>& labels, const std::vector<double>& values,
                 int highlight);

// Markers along a step axis, one row per kind of event, labelled with a tooltip.
struct Mark {
  double x;
  std::string kind, text;
};
std::string timeline(const std::string& id, const std::string& title, double x_max,
                     const std::vector<Mark>& marks);

}  // namespace cohort::monitor::svg
