// `cohort launch -n N -- COMMAND...`: replaces this process with srun or mpirun.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "cohort/env/environment.hpp"
#include "cohort/env/launch.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/error.hpp"
#include "command.hpp"

namespace po = boost::program_options;

namespace cohort::cli {

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
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: cohort launch -n N [--dry-run] -- COMMAND [ARGS...]\n"
              << "  srun inside a Slurm allocation, mpirun elsewhere\n"
              << options;
    return 0;
  }
  po::notify(vm);
  launch.running_as_root = geteuid() == 0;
  launch.cores = env::online_cpus();
  const auto argv = env::launch_argv(env::detect(env::Environment::from_process()), launch);
  if (vm.count("dry-run")) {
    for (const auto& word : argv) std::cout << word << (&word == &argv.back() ? "\n" : " ");
    return 0;
  }
  std::vector<char*> c_argv;
  for (const auto& word : argv) c_argv.push_back(const_cast<char*>(word.c_str()));
  c_argv.push_back(nullptr);
  // Ranks under mpirun write to a pseudo-terminal whatever mpirun's own output is: tell the
  // monitor's console (docs/monitoring.md) what the user's is.
  setenv("COHORT_STDOUT_TTY", isatty(STDOUT_FILENO) ? "1" : "0", 0);
  execvp(c_argv[0], c_argv.data());
  COHORT_THROW(UsageError, "cohort launch: cannot run ", argv[0], ": ", std::strerror(errno));
}

}  // namespace cohort::cli
