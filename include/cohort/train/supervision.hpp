// Supervision of a training run from outside its ranks (`cohort supervise`, `cohort slurm
// requeue`, or a library user's own launcher): after a step failed in a way a restart can cure,
// the slurm module's requeue policy (slurm::requeue_after_failure) with the run's [slurm]
// settings, told where the run stopped (the last step record of <train.run_dir>/metrics.jsonl)
// and where the next run resumes (the newest readable checkpoint). The outcome is appended to
// metrics.jsonl (a "requeue" or "step_failed" record), so that `cohort report` and `cohort top`
// show why the run stopped. The caller prints the line; exit 0 when requeued, 75 when not.
#pragma once

#include <string>

#include "cohort/env/environment.hpp"
#include "cohort/slurm/failure_requeue.hpp"
#include "cohort/train/config.hpp"

namespace cohort::train {

slurm::FailureRequeue requeue_after_failure(const TrainConfig& config, const std::string& reason,
                                            const env::Environment& environment);

}  // namespace cohort::train
