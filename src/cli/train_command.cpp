// `cohort train --config FILE [--set section.key=value ...] [--json]`: trains on every rank of the
// launch (`cohort launch -n N -- cohort train ...` picks srun or mpirun) and prints a summary.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cohort/comm/allocator.hpp"
#include "cohort/comm/mpi_session.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"
#include "cohort/ops/supervision.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/settings/config_paths.hpp"
#include "cohort/train/json.hpp"
#include "cohort/train/trainer.hpp"
#include "command.hpp"
#include "launch_record.hpp"
#include "mpi_start.hpp"
#include "train_arguments.hpp"

namespace cohort::cli {

namespace {

// Trains; what ends the training on this rank goes through ops::on_training_failure (a device
// fault ends every rank now with 78, reported for the supervisor), then on to main.
train::TrainSummary run_reporting_node_faults(const settings::Config& config,
                                              const env::Topology& topology,
                                              comm::MpiSession& session, bool json) {
  try {
    train::Trainer trainer(config, session, env::to_string(topology.launcher));
    return trainer.run(json ? stderr : stdout);
  } catch (const std::exception& e) {
    ops::on_training_failure(config, topology, session, e);
    throw;
  }
}

}  // namespace

int run_train(const std::vector<std::string>& args, int* argc, char*** argv) {
  const TrainArguments arguments = parse_train_arguments(args);
  if (arguments.help) {
    std::cout << arguments.help_text;
    return 0;
  }
  const auto config =
      settings::Config::load(arguments.file, arguments.overrides);  // before MPI: errors come fast
  settings::check_input_paths(config);
  settings::check_training_outputs(config);
  comm::tune_allocator(config.train.malloc_tuning);  // before anything allocates much
  const auto topology = env::detect(env::Environment::from_process());  // before MPI_Init
  apply_start_delay(config, topology.rank);
  comm::MpiSession session(argc, argv, startup_limit(config));
  const auto s = run_reporting_node_faults(config, topology, session, arguments.json);
  // Stopped by a signal after its checkpoint: every rank says "resume me" (75), so that srun's
  // and mpirun's exit status say it too.
  const int code = s.resumable ? static_cast<int>(ExitCode::kResumable) : 0;
  // Said to `cohort launch` now, before MPI_Finalize: mpirun, signalled itself, may end the ranks
  // in their finalize, after which nothing would say it.
  record_exit_code(code);
  if (session.rank() != 0) return code;
  if (arguments.json) {
    std::cout << train::to_json(s).dump(2, ' ', true, kJsonReplace) << "\n";
    return code;
  }
  std::printf(
      "done: %lld steps, %lld epoch(s), %d rank(s) x %d thread(s), %.1f s, %.0f samples/s (%s)\n",
      static_cast<long long>(s.steps), static_cast<long long>(s.epochs), s.ranks, s.threads,
      s.seconds, s.samples_per_s, train::stop_reason_text(s).c_str());
  if (s.evaluated) {
    std::printf("final eval: %s on %lld %s\n", models::eval_text(s.eval).c_str(),
                static_cast<long long>(s.eval.samples), s.eval.per_token ? "tokens" : "samples");
  }
  return code;
}

}  // namespace cohort::cli
