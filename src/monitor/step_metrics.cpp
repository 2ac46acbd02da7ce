#include "cohort/monitor/step_metrics.hpp"

namespace cohort::monitor {

const char* phase_name(int phase) {
  static const char* const kNames[kPhases] = {"data",      "forward",    "backward", "comm",
                                              "optimizer", "checkpoint", "other"};
  return phase >= 0 && phase < kPhases ? kNames[phase] : "?";
}

const char* phase_name(Phase phase) { return phase_name(static_cast<int>(phase)); }

}  // namespace cohort::monitor
