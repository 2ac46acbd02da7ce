// A figure a benchmark states a floor for (docs/performance.md), judged in one place: the text
// ends with a verdict line per floor and `--json` carries the same as "floors" and "floors_met",
// so that neither a reader nor a script compares numbers by eye. A floor is a statement about
// this machine at this moment: not met is reported, never an error (the exit status stays 0).
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cohort::cli {

struct Floor {
  std::string name;  // what is judged, e.g. "DDP / (compute + all-reduce)"
  double value = 0;
  double limit = 0;
  bool at_most = true;  // value <= limit (else value >= limit)

  bool met() const { return at_most ? value <= limit : value >= limit; }
};

inline void print_floors(const std::vector<Floor>& floors) {
  int met = 0;
  for (const auto& f : floors) met += f.met() ? 1 : 0;
  std::printf("verdict: %d of %zu floor(s) met\n", met, floors.size());
  for (const auto& f : floors) {
    std::printf("  %-44s %.4g %s %.4g: %s\n", f.name.c_str(), f.value,
                f.at_most ? "<=" : ">=", f.limit, f.met() ? "met" : "NOT MET");
  }
}

// Adds "floors" (each one's name, value, comparison, limit, met) and "floors_met" (all of them).
inline void add_floors(nlohmann::json& out, const std::vector<Floor>& floors) {
  bool all = true;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : floors) {
    all = all && f.met();
    list.push_back({{"name", f.name},
                    {"value", f.value},
                    {"comparison", f.at_most ? "<=" : ">="},
                    {"limit", f.limit},
                    {"met", f.met()}});
  }
  out["floors"] = list;
  out["floors_met"] = all;
}

}  // namespace cohort::cli
