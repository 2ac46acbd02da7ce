// One record and one line per restart of a failed run, with the seconds it lost in parts.
//
// Protocol: `cohort supervise`, which decides a restart (in the allocation on a spare, or a
// requeue), knows where the run stopped and when it decided; only the new step's rank 0 knows when
// it loaded and took its first step. So supervise writes <train.run_dir>/restart_pending.json
// (write_pending_restart, atomically) before it starts the new step or requeues, and rank 0 of the
// run that resumes completes it at its first step (complete_restart): the metrics.jsonl record
// {"event": "restart", ...} and the line
//   restart 1 in job 12 (in allocation, failure 1/3): n2 left out (not responding), spare n4
//   used; 21.3 s lost: detection 14.1 s, start 5.9 s, load 0.9 s, first step 0.4 s; 12 steps redone
// and the file is removed. A file of another job is left alone by the run and replaced by the next
// restart; one still pending when supervise writes the next (the new step failed before its first
// step) is returned by write_pending_restart as an incomplete record ("completed": false) for the
// caller to log. The file is Cohort's own but read as untrusted: a bad one is a warning, never a
// crash.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cohort/slurm/nodes.hpp"

namespace cohort::ops {

struct PendingRestart {
  std::string job;                          // SLURM_JOB_ID
  std::int64_t number = 0;                  // the job's restarts so far, this one included
  std::string kind;                         // "in_allocation" or "requeue"
  std::string budget;                       // "failure 1/3"
  std::string cause;                        // "step failed (exit 76)"
  std::int64_t failed_at_step = -1;         // the last step recorded before the failure
  std::string resumed_from;                 // the checkpoint the next step loads ("": none)
  std::vector<slurm::FailedNode> left_out;  // the nodes blamed now
  std::vector<std::string> spares;          // the spares that joined
  std::vector<std::string> nodes;           // the new step's nodes (empty for a requeue)
  std::int64_t last_step_ms = 0;            // that step record's time (Unix ms; 0: none)
  std::int64_t decided_ms = 0;              // when supervise decided (Unix ms)
};

std::string pending_restart_path(const std::string& run_dir);

// The record's clock: Unix time in milliseconds (supervise's decision and the new run's first
// step, usually on two nodes).
std::int64_t unix_ms();

// Writes the pending record; an older one still there (never completed) comes back as its record
// with "completed": false, for the caller to log first. Never throws for the old file.
std::optional<nlohmann::json> write_pending_restart(const std::string& run_dir,
                                                    const PendingRestart& pending);

struct CompletedRestart {
  nlohmann::json record;  // {"event": "restart", ...}
  std::string line;
};

// Rank 0 at the first step of a run of `job` that started at Unix ms `started_ms` (the trainer's
// setup), loaded its checkpoint at `resumed_step` in `load_s` and took the first step in
// `first_step_s`, at `now_ms`: the pending record of this job completed and the file removed;
// nullopt when there is none (or another job's, or one that cannot be read: said on stderr).
std::optional<CompletedRestart> complete_restart(const std::string& run_dir, const std::string& job,
                                                 std::int64_t resumed_step, double load_s,
                                                 double first_step_s, std::int64_t now_ms);

// The line of a record (complete or not), for tests and `cohort report`.
std::string restart_line(const nlohmann::json& record);

}  // namespace cohort::ops
