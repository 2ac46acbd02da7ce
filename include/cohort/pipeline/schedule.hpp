// Pipeline schedules: the ordered actions one stage runs in one training step.
//
// A step pushes M micro-batches through p stages. Each stage runs a forward and a backward for
// every micro-batch; the schedule decides their order, the same on every data-parallel replica:
//   GPipe: all M forwards, then all M backwards (in micro-batch order). A stage holds the
//          activations of all M micro-batches at once.
//   1F1B:  stage s first runs w = min(p - s - 1, M) warm-up forwards, then alternates one
//          forward and one backward, then drains the last w backwards. A stage never holds more
//          than p - s micro-batches' activations, whatever M; the step is flushed at its end.
// Both leave the same idle time ("bubble") at the start and end of a step: with equal stages,
// (p - 1) / (M + p - 1) of it (bubble_fraction_theory). Communication is implied by the actions:
// a forward receives its input from stage s - 1 (unless first) and sends its output to s + 1
// (unless last); a backward receives the output's gradient from s + 1 (unless last) and sends the
// input's gradient to s - 1 (unless first). Pure: no torch, no MPI.
#pragma once

#include <string>
#include <vector>

namespace cohort::pipeline {

enum class Schedule { kGpipe, kOneFOneB };

// "gpipe" or "1f1b"; ConfigError naming parallel.schedule otherwise.
Schedule parse_schedule(const std::string& name);
const char* to_string(Schedule schedule);

struct Action {
  enum class Kind { kForward, kBackward };
  Kind kind;
  int micro;  // micro-batch index, 0..M-1
  bool operator==(const Action& other) const { return kind == other.kind && micro == other.micro; }
};

// The actions of `stage` (0..stages-1) for `micro_batches` micro-batches. ConfigError for a
// stage outside the pipeline or micro_batches < 1.
std::vector<Action> schedule_actions(Schedule schedule, int stages, int stage, int micro_batches);

// Most micro-batches whose forward has run and whose backward has not, over the actions.
int peak_in_flight(const std::vector<Action>& actions);

// (p - 1) / (M + p - 1).
double bubble_fraction_theory(int stages, int micro_batches);

// "F0 F1 B0 F2 B1 B2": for logs and tests.
std::string describe(const std::vector<Action>& actions);

}  // namespace cohort::pipeline
