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
#include "cohort/slurm/restart_ledger.hpp"

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

// The restart policy in one place. Each cause has its budget (slurm.max_preemptions: signals and
// the time limit; slurm.max_failures: lost ranks and nodes, hangs, device faults;
// slurm.max_preflight_requeues: nodes that failed pre-flight), counted in the run's restart ledger
// (restart_ledger.hpp); slurm.max_restarts caps SLURM_RESTART_COUNT, all causes together. A
// negative budget is unlimited.
struct RestartBudgets {
  bool requeue = true;             // slurm.requeue
  int max_restarts = -1;           // slurm.max_restarts
  int max_preemptions = -1;        // slurm.max_preemptions
  int max_failures = 3;            // slurm.max_failures
  int max_preflight_requeues = 2;  // slurm.max_preflight_requeues
  std::string ledger;              // the ledger's path ("": counts from SLURM_RESTART_COUNT)
};

// Requeues the job (when `act`; only one process of a run should) if it is a Slurm job, allowed,
// and within both its cause's budget and slurm.max_restarts; when it did, the ledger counts it
// (and a failure's `failure` point). The text ends a log line: "requeued job 12 (failure 1/3)",
// "requeued job 12 (preemption 4, no limit)", "failure budget spent (3/3 failures,
// slurm.max_failures): not requeueing job 12", "could not requeue job 12: ...; stopping to be
// resumed (exit code 75)" or, outside Slurm or when not allowed, "stopping to be resumed (exit
// code 75)". A ledger that cannot be read is an IoError.
struct RequeueOutcome {
  bool requeued = false;
  std::string text;
};
RequeueOutcome requeue_within_budget(const JobIdentity& job, const RestartBudgets& budgets,
                                     RestartCause cause, bool act,
                                     const std::optional<FailurePoint>& failure = std::nullopt);

// The same policy for a failure restarted inside the allocation (a new step on a spare or on the
// same nodes, no requeue): the failure budget (slurm.max_failures) and slurm.max_restarts
// (SLURM_RESTART_COUNT plus the ledger's in-allocation restarts) apply as to a requeue. When
// allowed and `act`, the ledger counts a failure at `failure` and an in-allocation restart. The
// text: "restarting in job 12 (failure 1/3)", or the refusal as requeue_within_budget says it.
RequeueOutcome restart_within_budget(const JobIdentity& job, const RestartBudgets& budgets,
                                     bool act, const FailurePoint& failure);

}  // namespace cohort::slurm
