// The mark a rank of a supervised training step leaves when it ends the step abnormally (a hang,
// a lost peer, a node fault: exit 76, 77, 78), so that `cohort supervise` ends the step at once
// instead of waiting for srun to give up on a node that cannot answer (srun waits KillWait + 2 s
// for a task it cannot reach: 7 s on the test clusters, 32 s with Slurm's default KillWait).
//
// Protocol: supervise names a file of its run directory in COHORT_STEP_FAILED (removed before each
// step) in the step's environment; the first rank to fail creates it exclusively and writes its
// exit code; supervise, polling, ends the step a grace period after it appears
// (ops::run_forwarding, which reads it with ops::read_step_mark through io's bounded input path).
// Outside a supervised step the variable is unset and nothing is written.
#pragma once

namespace cohort::env {

inline constexpr const char* kStepFailedVariable = "COHORT_STEP_FAILED";

// Leaves the mark when the variable names a file and none is there yet. Async-signal-safe (open,
// write, close; no allocation), so that the watchdog's thread and an abort path may call it;
// never throws, and a mark that cannot be written is simply not left (the step then ends as srun
// ends it).
void mark_step_failed(int code) noexcept;

}  // namespace cohort::env
