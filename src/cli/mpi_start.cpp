#include "mpi_start.hpp"

#include <thread>

#include "cohort/env/environment.hpp"
#include "cohort/env/topology.hpp"

namespace cohort::cli {

std::chrono::seconds startup_limit(const settings::TrainConfig& config) {
  if (config.debug.start_delay_rank >= 0 &&
      env::detect(env::Environment::from_process()).rank == config.debug.start_delay_rank) {
    std::this_thread::sleep_for(std::chrono::seconds(config.debug.start_delay_s));
  }
  return std::chrono::seconds(config.parallel.timeout_s);
}

}  // namespace cohort::cli
