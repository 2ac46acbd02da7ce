// SteadyClock: the trainer's steady-state throughput (TrainSummary::steady_samples_per_s).
#pragma once

#include <chrono>
#include <cstdint>

namespace cohort::train {

// Throughput after the warm-up: the first kWarmupSteps steps (allocations, first collectives,
// page faults) and evaluation are left out, so the figure compares with a peer's steady state.
class SteadyClock {
 public:
  static constexpr std::int64_t kWarmupSteps = 3;
  using Clock = std::chrono::steady_clock;

  void step_done(std::int64_t step) {
    last_ = Clock::now();
    if (step == kWarmupSteps) {
      first_ = last_;
      excluded_ = {};
    }
    steps_ = step;
  }
  void exclude(Clock::duration d) { excluded_ += d; }
  // 0 when the run was too short to have a steady part.
  double samples_per_s(std::int64_t samples_per_step) const {
    if (steps_ <= kWarmupSteps) return 0;
    const double seconds = std::chrono::duration<double>(last_ - first_ - excluded_).count();
    return seconds > 0 ? static_cast<double>((steps_ - kWarmupSteps) * samples_per_step) / seconds
                       : 0;
  }

 private:
  Clock::time_point first_, last_;
  Clock::duration excluded_{};
  std::int64_t steps_ = 0;
};

}  // namespace cohort::train
