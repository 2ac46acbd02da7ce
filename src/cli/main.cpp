// `cohort <command> ...`: the light front end. It runs the commands that need no LibTorch in
// process and hands the others (kTorchCommands) to cohort-torch; it links no LibTorch, so that
// `cohort --version`, `cohort ckpt list` or `cohort top` answer in milliseconds (docs/building.md).
#include <iostream>

#include "cohort/config.hpp"
#include "cohort/error.hpp"
#include "command.hpp"

namespace cohort::cli {

const bool kTorchExecutable = false;

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"env", "print where each rank stands: topology, devices, libraries", nullptr},
      {"train", "train a model on every rank: cohort launch -n N -- cohort train --config F",
       nullptr},
      {"doctor", "pre-flight checks of every node before training (one task per node)", nullptr},
      {"predict", "a trained model's outputs for a dataset, on N ranks, in one HDF5 file", nullptr},
      {"eval", "a trained model's metrics on a dataset: per-class accuracy, confusion matrix",
       nullptr},
      {"config", "trainer configuration: check a file, print the key reference", run_config},
      {"data", "datasets: make-synthetic, import, inspect, split, stage", run_data},
      {"ckpt", "checkpoints: list, inspect, verify, export", run_ckpt},
      {"bench", "benchmarks against a baseline in the same run: allreduce, ddp, io, ckpt", nullptr},
      {"submit", "submit a training job: a script rendered from sbatch/train.sbatch", run_submit},
      {"supervise", "a batch script's training step: signals passed on, requeue when it fails",
       run_supervise},
      {"slurm", "for batch scripts: requeue the job through libslurm (restart budget)", run_slurm},
      {"report", "write a run's HTML report (charts, events, diagnosis)", run_report},
      {"top", "follow a running job's metrics live in the terminal", run_top},
      {"launch", "start N ranks of a command: srun in an allocation, mpirun elsewhere", run_launch},
  };
  return table;
}

namespace {

void print_help(std::ostream& out) {
  out << "usage: cohort <command> [options]\n\ncommands:\n";
  for (const auto& command : commands()) {
    out << "  " << command.name << std::string(10 - std::string(command.name).size(), ' ')
        << command.summary << "\n";
  }
  out << "  help      show this help (cohort <command> --help for a command's options)\n"
      << "\noptions:\n  --version  print the version\n"
      << "\nexit codes: 0 ok, 1 internal error, 2 usage/config/environment, 3 data or checkpoint "
         "input,\n            4 training diverged, 75 stopped to be resumed, 76 watchdog, 77 peer "
         "lost "
         "(docs/exit-codes.md)\n";
}

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    print_help(std::cerr);
    return static_cast<int>(ExitCode::kUsage);
  }
  const std::string name = argv[1];
  if (name == "help" || name == "--help" || name == "-h") {
    print_help(std::cout);
    return 0;
  }
  if (name == "--version") {
    std::cout << "cohort " << COHORT_VERSION << "\n";
    return 0;
  }
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (needs_torch(args)) exec_torch(argv);
  for (const auto& command : commands()) {
    if (name == command.name && command.run != nullptr) {
      return command.run(std::vector<std::string>(argv + 2, argv + argc), &argc, &argv);
    }
  }
  COHORT_THROW(UsageError, "unknown command '", name, "' (see: cohort help)");
}

}  // namespace
}  // namespace cohort::cli

int main(int argc, char** argv) {
  return cohort::cli::exit_status_of(cohort::cli::dispatch, argc, argv);
}
