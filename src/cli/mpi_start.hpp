// The start-up limit of the commands of cohort-torch that run with a training's settings.
//
// A rank that dies inside MPI_Init, or never starts, leaves the job's other ranks waiting in
// MPI_Init or the world's duplicate, before any communicator or watchdog exists: seen on Debian
// 12 (Open MPI 4.1, Slurm 22.05, a loaded node), where rank 0 of `srun cohort doctor` took a
// SIGSEGV inside Open MPI's start-up and the other two waited until the test's timeout.
// MpiSession's start-up guard ends such a wait with 76 after the limit, comm::kStartupLimit
// unless the command has a training's settings.
#pragma once

#include <chrono>

#include "cohort/settings/config.hpp"

namespace cohort::cli {

// The limit of a command run with a training's settings: its parallel.timeout_s.
inline std::chrono::seconds startup_limit(const settings::TrainConfig& config) {
  return std::chrono::seconds(config.parallel.timeout_s);
}

// The fault switch debug.start_delay_rank/start_delay_s: that rank sleeps here, before MPI_Init,
// and joins late (tests/train/bad_runs.sh). Call it before starting MPI.
void apply_start_delay(const settings::TrainConfig& config, int rank);

}  // namespace cohort::cli
