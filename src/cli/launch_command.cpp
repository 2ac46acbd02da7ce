// `cohort launch -n N -- COMMAND...`: starts N ranks of COMMAND with srun or mpirun and waits for
// them. What it adds to running the launcher directly:
// - `cohort train`'s configuration is checked once here, before any rank starts: its error is one
//   line, not one per rank;
// - an error line every rank says alike is printed once, and the exit status is the first failing
//   rank's own (launch_record.hpp): a run stopped to be resumed ends 75 here too;
// - mpirun's paragraph repeating a rank's non-zero exit is left out (launch_output.hpp);
// - a signal sent to the launcher (kill, a batch system) is passed on to mpirun or srun; to
//   mpirun, the first stop signal as SIGUSR1 (ops/step_runner.hpp says why).
#include <fcntl.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "cohort/env/environment.hpp"
#include "cohort/env/launch.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/error.hpp"
#include "cohort/ops/step_runner.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/settings/config_paths.hpp"
#include "command.hpp"
#include "launch_output.hpp"
#include "launch_record.hpp"
#include "options.hpp"
#include "train_arguments.hpp"

namespace po = boost::program_options;

namespace cohort::cli {
namespace {

// `cohort train ...` (the cohort or cohort-torch executable, any path): its config, loaded as
// each rank would load it. Model libraries (model.library) are left to the ranks: only
// cohort-torch can load them.
void check_train_config(const std::vector<std::string>& command) {
  if (command.size() < 2 || command[1] != "train") return;
  const std::string program = command[0].substr(command[0].rfind('/') + 1);
  if (program != "cohort" && program != "cohort-torch") return;
  const auto arguments = parse_train_arguments({command.begin() + 2, command.end()});
  if (arguments.help) return;
  const auto config = settings::Config::load(arguments.file, arguments.overrides);
  settings::check_input_paths(config);
  settings::check_training_outputs(config);
}

int run_and_wait(const std::vector<std::string>& argv) {
  LaunchRecord record;
  if (argv.front() != "mpirun") {  // srun's own messages name the task and node: kept
    const ops::StepEnd end = ops::run_forwarding(argv);
    return record.first_exit().value_or(end.code);
  }
  int fds[2];
  COHORT_CHECK(pipe2(fds, O_CLOEXEC) == 0, EnvironmentError,
               "cohort launch: pipe: ", std::strerror(errno));
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  MpirunStderr output(std::move(read_end), record);
  const ops::StepEnd end = ops::run_forwarding(argv, std::chrono::seconds(0), std::move(write_end),
                                               /*stop_as_usr1=*/true);
  output.mpirun_ended();
  return record.first_exit().value_or(end.code);
}

}  // namespace

int run_launch(const std::vector<std::string>& args, int* /*argc*/, char*** /*argv*/) {
  po::options_description options("cohort launch options");
  env::LaunchOptions launch;
  options.add_options()("help,h", "show this help")(
      "ranks,n", po::value<int>(&launch.ranks)->required(), "number of ranks")(
      "dry-run", "print the launcher command instead of running it");
  po::options_description hidden;
  hidden.add_options()("command", po::value<std::vector<std::string>>(&launch.command));
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description positional;
  positional.add("command", -1);
  // --help shows `options` only: `all` adds the hidden COMMAND that the usage line names.
  const auto parsed =
      parse_or_help(args, all,
                    "usage: cohort launch -n N [--dry-run] -- COMMAND [ARGS...]\n"
                    "  srun inside a Slurm allocation, mpirun elsewhere; exits with the first\n"
                    "  failing rank's code (docs/launcher.md)\n",
                    &positional, &options);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  launch.running_as_root = geteuid() == 0;
  launch.cores = env::online_cpus();
  const auto argv = env::launch_argv(env::detect(env::Environment::from_process()), launch);
  if (vm.count("dry-run")) {
    for (const auto& word : argv) std::cout << word << (&word == &argv.back() ? "\n" : " ");
    return 0;
  }
  check_train_config(launch.command);
  return run_and_wait(argv);
}

}  // namespace cohort::cli
