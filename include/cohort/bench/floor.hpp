// A figure a benchmark states a floor for (docs/performance.md), judged in one place: the text
// ends with a verdict line per floor and `--json` carries the same as "floors" and "floors_met",
// so that neither a reader nor a script compares numbers by eye. A floor is a statement about
// this machine at this moment: not met is reported, never an error (the exit status stays 0).
#pragma once

#include <string>
#include <vector>

#include "cohort/bench/ckpt.hpp"
#include "cohort/bench/ddp.hpp"
#include "cohort/bench/monitor.hpp"

namespace cohort::bench {

struct Floor {
  std::string name;  // what is judged, e.g. "DDP / (compute + all-reduce)"
  double value = 0;
  double limit = 0;
  bool at_most = true;  // value <= limit (else value >= limit)

  bool met() const { return at_most ? value <= limit : value >= limit; }
};

// The floors each benchmark's result is judged against, in the order they are reported.
std::vector<Floor> floors(const DdpBenchResult& result);      // DDP / (compute + all-reduce)
std::vector<Floor> floors(const CkptBenchResult& result);     // save speed, async stall, restart
std::vector<Floor> floors(const MonitorBenchResult& result);  // metrics overhead

}  // namespace cohort::bench
