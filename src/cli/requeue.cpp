#include "requeue.hpp"

#include <cstdio>

#include "cohort/env/environment.hpp"
#include "cohort/error.hpp"
#include "cohort/train/supervision.hpp"

namespace cohort::cli {

int requeue_after_failure(const train::Config& config, const std::string& reason) {
  const auto outcome =
      train::requeue_after_failure(config, reason, env::Environment::from_process());
  std::printf("%s\n", outcome.line.c_str());
  std::fflush(stdout);
  return outcome.requeued ? 0 : static_cast<int>(ExitCode::kResumable);
}

}  // namespace cohort::cli
