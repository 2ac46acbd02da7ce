#include "cohort/pipeline/schedule.hpp"

#include <algorithm>

#include "cohort/error.hpp"

namespace cohort::pipeline {

Schedule parse_schedule(const std::string& name) {
  if (name == "gpipe") return Schedule::kGpipe;
  if (name == "1f1b") return Schedule::kOneFOneB;
  COHORT_THROW(ConfigError, "parallel.schedule: '", name, "' is not one of gpipe, 1f1b");
}

const char* to_string(Schedule schedule) { return schedule == Schedule::kGpipe ? "gpipe" : "1f1b"; }

std::vector<Action> schedule_actions(Schedule schedule, int stages, int stage, int micro_batches) {
  COHORT_CHECK(stages >= 1 && stage >= 0 && stage < stages, ConfigError, "pipeline stage ", stage,
               " outside 0..", stages - 1);
  COHORT_CHECK(micro_batches >= 1, ConfigError, "parallel.micro_batches must be >= 1, not ",
               micro_batches);
  using K = Action::Kind;
  std::vector<Action> actions;
  if (schedule == Schedule::kGpipe) {
    for (int m = 0; m < micro_batches; ++m) actions.push_back({K::kForward, m});
    for (int m = 0; m < micro_batches; ++m) actions.push_back({K::kBackward, m});
    return actions;
  }
  // Warm-up forwards fill the pipeline below this stage; a later stage needs fewer.
  const int warmup = std::min(stages - stage - 1, micro_batches);
  for (int m = 0; m < warmup; ++m) actions.push_back({K::kForward, m});
  for (int i = 0; i < micro_batches - warmup; ++i) {
    actions.push_back({K::kForward, warmup + i});
    actions.push_back({K::kBackward, i});
  }
  for (int m = micro_batches - warmup; m < micro_batches; ++m) actions.push_back({K::kBackward, m});
  return actions;
}

int peak_in_flight(const std::vector<Action>& actions) {
  int live = 0, peak = 0;
  for (const auto& a : actions) {
    live += a.kind == Action::Kind::kForward ? 1 : -1;
    peak = std::max(peak, live);
  }
  return peak;
}

double bubble_fraction_theory(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

std::string describe(const std::vector<Action>& actions) {
  std::string out;
  for (const auto& a : actions) {
    if (!out.empty()) out += ' ';
    out += (a.kind == Action::Kind::kForward ? 'F' : 'B') + std::to_string(a.micro);
  }
  return out;
}

}  // namespace cohort::pipeline
