#include "mpi_start.hpp"

#include <thread>

namespace cohort::cli {

void apply_start_delay(const settings::TrainConfig& config, int rank) {
  if (config.debug.start_delay_rank == rank) {
    std::this_thread::sleep_for(std::chrono::seconds(config.debug.start_delay_s));
  }
}

}  // namespace cohort::cli
