// The Slurm job this process runs in, and what it may ask of the controller through libslurm
// (never by shelling out to scontrol, which many containers lack).
//
// current_job() reads the job from the environment Slurm gives its tasks: the id to act on
// ("<SLURM_ARRAY_JOB_ID>_<SLURM_ARRAY_TASK_ID>" for an array task, SLURM_JOB_ID otherwise) and
// SLURM_RESTART_COUNT. requeue() asks the controller to requeue that job (slurm_requeue2: Slurm
// terminates what still runs and puts the job back in the queue, where it starts again with
// SLURM_RESTART_COUNT one higher). Every libslurm call goes through COHORT_SLURM_CHECK, which names
// the call and Slurm's own message.
#pragma once

#include <ctime>
#include <optional>
#include <string>

#include "cohort/env/environment.hpp"

namespace cohort::slurm {

struct JobIdentity {
  bool in_job = false;    // SLURM_JOB_ID is set
  std::string job_id;     // SLURM_JOB_ID
  std::string target;     // what requeue acts on: the array task's "123_4", else the job id
  int restart_count = 0;  // SLURM_RESTART_COUNT (0 on the first run)
};

JobIdentity current_job(const env::Environment& environment);

// When the job's time limit runs out (seconds since the epoch), read from the controller
// (slurm_load_job); nullopt for a job without one. SlurmError when the controller cannot say.
std::optional<std::time_t> job_end_time(const std::string& job_id);

// Requeues the job `target` names (a job id, or "<array job>_<task>"). SlurmError on failure.
void requeue(const std::string& target);

// The restart policy in one place: requeues the job (when `act`; only rank 0 of a run should) if
// it is a Slurm job, `allowed`, and its restart count is below `max_restarts`. The text ends a log
// line: "requeued job 12 (restart 1/3)", "restart budget spent (3/3 restarts,
// slurm.max_restarts): not requeueing job 12", "could not requeue job 12: ...; stopping to be
// resumed (exit code 75)" or, outside Slurm or when not allowed, "stopping to be resumed (exit
// code 75)".
struct RequeueOutcome {
  bool requeued = false;
  std::string text;
};
RequeueOutcome requeue_within_budget(const JobIdentity& job, bool allowed, int max_restarts,
                                     bool act);

}  // namespace cohort::slurm
