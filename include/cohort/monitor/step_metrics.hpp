// What one rank measures in one optimizer step, and the timer that splits the step into phases.
//
// StepTimer protocol: begin() at the start of a step (right after the previous one ended, so that
// nothing falls between steps), lap(phase) each time a phase ends (the time since the previous
// mark goes to that phase, several laps of one phase add up: micro-batches), end() when the step
// is over. end() puts what no lap claimed (logging, the signal check) into kOther, so the phases
// always sum to the step's wall time. The clock is the host's: on a GPU, a phase is charged where
// the host waits for the device.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace cohort::monitor {

enum class Phase : int { kData, kForward, kBackward, kComm, kOptimizer, kCheckpoint, kOther };
constexpr int kPhases = 7;
// "data", "forward", "backward", "comm", "optimizer", "checkpoint", "other".
const char* phase_name(Phase phase);
const char* phase_name(int phase);

struct StepSample {
  std::int64_t step = 0;  // 1-based: the step just finished
  std::int64_t epoch = 0;
  double seconds = 0;                   // wall time of the step on this rank
  std::array<double, kPhases> phase{};  // seconds; sums to `seconds`
  double loss = 0;                      // averaged over all ranks
  double lr = 0;
  double grad_norm = 0;      // global L2 norm of the averaged gradients (before clipping)
  std::int64_t samples = 0;  // samples of this step over all ranks
  std::int64_t tokens = 0;   // tokens of this step over all ranks (token models; else 0)
};

class StepTimer {
 public:
  using Clock = std::chrono::steady_clock;

  void begin() {
    start_ = mark_ = Clock::now();
    phase_.fill(0);
  }
  void lap(Phase phase) {
    const auto now = Clock::now();
    phase_[static_cast<int>(phase)] += std::chrono::duration<double>(now - mark_).count();
    mark_ = now;
  }
  // Charges `seconds` of the time since the last mark to `phase` and the rest to `rest`
  // (exposed communication measured inside a call that also did other work).
  void split_lap(Phase phase, double seconds, Phase rest) {
    const auto now = Clock::now();
    const double total = std::chrono::duration<double>(now - mark_).count();
    const double part = seconds < total ? (seconds > 0 ? seconds : 0) : total;
    phase_[static_cast<int>(phase)] += part;
    phase_[static_cast<int>(rest)] += total - part;
    mark_ = now;
  }
  // Ends the step: fills `sample.seconds` and `sample.phase`.
  void end(StepSample& sample) {
    const auto now = Clock::now();
    sample.seconds = std::chrono::duration<double>(now - start_).count();
    double claimed = 0;
    for (int i = 0; i < kPhases; ++i) {
      if (i != static_cast<int>(Phase::kOther)) claimed += phase_[i];
    }
    phase_[static_cast<int>(Phase::kOther)] +=
        sample.seconds > claimed ? sample.seconds - claimed : 0;
    sample.phase = phase_;
  }

 private:
  Clock::time_point start_{}, mark_{};
  std::array<double, kPhases> phase_{};
};

}  // namespace cohort::monitor
