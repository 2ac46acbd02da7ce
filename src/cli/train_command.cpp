// `cohort train --config FILE [--set section.key=value ...] [--json]`: trains on every rank of the
// launch (`cohort launch -n N -- cohort train ...` picks srun or mpirun) and prints a summary.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cohort/comm/allocator.hpp"
#include "cohort/comm/faults.hpp"
#include "cohort/comm/mpi_session.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"
#include "cohort/train/config.hpp"
#include "cohort/train/config_paths.hpp"
#include "cohort/train/supervision.hpp"
#include "cohort/train/trainer.hpp"
#include "command.hpp"
#include "launch_record.hpp"
#include "train_arguments.hpp"

namespace cohort::cli {

namespace {

// Trains; a device fault (train::is_device_fault) is the node's, not the run's: it is reported
// for the supervisor (which excludes the node) and ends every rank now with 78, instead of
// leaving the others in a collective until the watchdog. Any other error goes on to main.
train::TrainSummary run_reporting_node_faults(const train::Config& config,
                                              const env::Topology& topology,
                                              comm::MpiSession& session, bool json) {
  try {
    train::Trainer trainer(config, session, env::to_string(topology.launcher));
    return trainer.run(json ? stderr : stdout);
  } catch (const std::exception& e) {
    if (!train::is_device_fault(e)) {
      // LibTorch's out-of-memory or invalid device ordinal: the job's settings (exit 2), not a bug.
      if (dynamic_cast<const Error*>(&e) == nullptr &&
          comm::classify_message(e.what()) == comm::FaultClass::kConfiguration) {
        throw ConfigError(e.what());
      }
      throw;
    }
    const std::string node = topology.host.empty() ? env::hostname() : topology.host;
    train::report_node_fault(config, node, std::string("device fault: ") + e.what());
    std::fprintf(stderr, "cohort: error: rank %d on node %s: device fault: %s\n", session.rank(),
                 node.c_str(), e.what());
    session.abort(static_cast<int>(ExitCode::kNodeFault));
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
      train::Config::load(arguments.file, arguments.overrides);  // before MPI: errors come fast
  train::check_input_paths(config);
  train::check_training_outputs(config);
  comm::tune_allocator(config.train.malloc_tuning);  // before anything allocates much
  const auto topology = env::detect(env::Environment::from_process());  // before MPI_Init
  if (config.debug.start_delay_rank == topology.rank) {
    std::this_thread::sleep_for(std::chrono::seconds(config.debug.start_delay_s));
  }
  comm::MpiSession session(argc, argv, std::chrono::seconds(config.parallel.timeout_s));
  const auto s = run_reporting_node_faults(config, topology, session, arguments.json);
  // Stopped by a signal after its checkpoint: every rank says "resume me" (75), so that srun's
  // and mpirun's exit status say it too.
  const int code = s.resumable ? static_cast<int>(ExitCode::kResumable) : 0;
  // Said to `cohort launch` now, before MPI_Finalize: mpirun, signalled itself, may end the ranks
  // in their finalize, after which nothing would say it.
  record_exit_code(code);
  if (session.rank() != 0) return code;
  nlohmann::json out = {{"steps", s.steps},
                        {"epochs", s.epochs},
                        {"ranks", s.ranks},
                        {"threads_per_rank", s.threads},
                        {"blas_threads_per_rank", s.blas_threads},
                        {"malloc_tuning", s.malloc_tuning},
                        {"launcher", s.launcher},
                        {"last_loss", s.last_loss},
                        {"seconds", s.seconds},
                        {"samples_per_s", s.samples_per_s},
                        {"steady_samples_per_s", s.steady_samples_per_s},
                        {"stop_reason", train::stop_reason_text(s)},
                        {"resumable", s.resumable},
                        {"config_hash", s.config_hash}};
  if (s.evaluated) {
    out["eval"] = {{"loss", s.eval.loss},
                   {"accuracy", s.eval.accuracy},
                   {"perplexity", s.eval.perplexity},
                   {"samples", s.eval.samples},
                   {"task", s.eval.task}};
    for (const auto& [name, value] : s.eval.metrics) out["eval"][name] = value;
  }
  if (arguments.json) {
    std::cout << out.dump(2, ' ', true, kJsonReplace) << "\n";
    return code;
  }
  std::printf(
      "done: %lld steps, %lld epoch(s), %d rank(s) x %d thread(s), %.1f s, %.0f samples/s (%s)\n",
      static_cast<long long>(s.steps), static_cast<long long>(s.epochs), s.ranks, s.threads,
      s.seconds, s.samples_per_s, train::stop_reason_text(s).c_str());
  if (s.evaluated) {
    std::printf("final eval: %s on %lld %s\n", train::eval_text(s.eval).c_str(),
                static_cast<long long>(s.eval.samples), s.eval.per_token ? "tokens" : "samples");
  }
  return code;
}

}  // namespace cohort::cli
