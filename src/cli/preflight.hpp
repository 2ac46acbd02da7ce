// `cohort supervise` with slurm.preflight on: before the training step, `cohort doctor` runs as a
// step of its own, one task per node (train/doctor.hpp). Nodes that fail are excluded the way a
// lost node is (train::requeue_after_failure with RestartCause::kPreflight, under
// slurm.max_preflight_requeues) and the job is requeued before any training time is spent. A run
// where every node passes goes on to train; so does one whose doctor gave no report within
// slurm.preflight_timeout (said in one line: the checks are a help, not a gate that can hang).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cohort/train/config.hpp"

namespace cohort::cli {

// nullopt: train. Otherwise the exit code of the batch script: 0 when requeued, else the
// doctor's (80 + its first failing check).
std::optional<int> preflight(const train::Config& config, const std::string& file,
                             const std::vector<std::string>& overrides, int ranks);

}  // namespace cohort::cli
