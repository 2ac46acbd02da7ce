// `cohort slurm requeue` and `cohort supervise` after a failed step: the policy is the library's
// (train::requeue_after_failure, over slurm::requeue_after_failure); this prints its line and
// turns the outcome into the exit status: 0 when the job was requeued, 75 when not.
#pragma once

#include <string>

#include "cohort/train/config.hpp"

namespace cohort::cli {

int requeue_after_failure(const train::Config& config, const std::string& reason);

}  // namespace cohort::cli
