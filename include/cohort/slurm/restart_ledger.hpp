// How often a run was requeued, and why: preemptions (a signal, the time limit), failures (a lost
// rank or node, a hang, a device fault) and pre-flight requeues (a node that failed `cohort
// doctor`) each spend a budget of their own, which SLURM_RESTART_COUNT (one count for all) cannot
// tell apart. The ledger is <train.run_dir>/restarts.json, written by the one process that
// requeues (rank 0 after a signal, `cohort supervise` after a failed step or pre-flight) after
// the controller took the requeue, replaced atomically.
//
// Protocol: load() reads the ledger of the job `job_id`; a missing file, or one another job wrote
// (a new submission of the same run directory), starts from zero. The file is Cohort's own but
// read as untrusted: a bad one is an IoError naming the file and the field (exit 3), never a
// crash. crash_loop() is the decision after a failure: the run failed again from the same
// checkpoint, having written no newer one since the failure before (its last step is not a
// measure of progress: the step records of the last second before a kill may be lost).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cohort::slurm {

enum class RestartCause { kPreemption, kFailure, kPreflight };

// Where a failed run stood: its newest readable checkpoint ("" when none) and its last step.
struct FailurePoint {
  std::string checkpoint;
  std::int64_t step = -1;
};

struct RestartLedger {
  std::string job;
  std::int64_t preemptions = 0;
  std::int64_t failures = 0;
  std::int64_t preflight_requeues = 0;
  // Of the failures, those restarted inside the allocation on a spare (or the same nodes) without
  // a requeue: slurm.max_restarts counts them beside SLURM_RESTART_COUNT.
  std::int64_t in_allocation = 0;
  // The nodes the training step runs on when the job has spares (0: no spares). Written on the
  // first run, so that a requeued job of fewer nodes (lowered to N after the
  // spares were used up) knows how many of them are spares.
  std::int64_t step_nodes = 0;
  std::optional<FailurePoint> last_failure;  // cleared by a preemption (it saved a checkpoint)

  static RestartLedger load(const std::string& path, const std::string& job_id);
  void save(const std::string& path) const;

  std::int64_t& count(RestartCause cause);
  // Counts a requeue for `cause`; a failure remembers where it happened.
  void record(RestartCause cause, const std::optional<FailurePoint>& failure);
};

// Whether failing at `now` after having failed at `previous` is a crash loop: the same checkpoint
// (none, both times, is the same too).
bool crash_loop(const std::optional<FailurePoint>& previous, const FailurePoint& now);

// The ledger's path in a run directory.
std::string ledger_path(const std::string& run_dir);

}  // namespace cohort::slurm
