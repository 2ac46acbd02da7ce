// `cohort slurm requeue --config FILE [--set k=v ...] [--reason TEXT]`: for batch scripts. After a
// training step failed in a way a restart can cure (exit 76: a collective hung; 77: a rank or node
// was lost), the script asks for the job to be requeued through libslurm under the same restart
// policy the trainer applies to signals (slurm.requeue, slurm.max_restarts). Exit 0 when the job
// was requeued, 75 when it was not (outside Slurm, not allowed, budget spent).
#include <boost/program_options.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "cohort/env/environment.hpp"
#include "cohort/error.hpp"
#include "cohort/slurm/job.hpp"
#include "cohort/train/config.hpp"
#include "command.hpp"

namespace po = boost::program_options;

namespace cohort::cli {
namespace {

int requeue(const std::vector<std::string>& args) {
  std::string file, reason = "requeue asked";
  std::vector<std::string> overrides;
  po::options_description desc("cohort slurm requeue options");
  desc.add_options()("help,h", "show this help")("config,c", po::value(&file),
                                                 "the training's INI file (its [slurm] keys)")(
      "set", po::value(&overrides)->composing(), "override: section.key=value (repeatable)")(
      "reason", po::value(&reason), "what happened, for the log line");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: cohort slurm requeue --config FILE [--set k=v ...] [--reason TEXT]\n"
              << desc;
    return 0;
  }
  po::notify(vm);
  const auto config = train::Config::load(file, overrides);
  const auto job = slurm::current_job(env::Environment::from_process());
  // Slurm terminates the running job as it requeues it, this process included, possibly before
  // the RPC returns: SIGTERM is ignored so that the outcome still gets printed (Slurm's SIGKILL
  // follows KillWait seconds later, long after this exits).
  std::signal(SIGTERM, SIG_IGN);
  const auto outcome = slurm::requeue_within_budget(
      job, config.get_bool("slurm.requeue"), static_cast<int>(config.get_int("slurm.max_restarts")),
      /*act=*/true);
  std::printf("%s: %s\n", reason.c_str(), outcome.text.c_str());
  std::fflush(stdout);
  return outcome.requeued ? 0 : static_cast<int>(ExitCode::kResumable);
}

}  // namespace

int run_slurm(const std::vector<std::string>& args, int*, char***) {
  const std::string sub = args.empty() ? "" : args[0];
  if (sub == "requeue") return requeue({args.begin() + 1, args.end()});
  COHORT_THROW(UsageError, "cohort slurm: unknown subcommand '", sub, "' (requeue)");
}

}  // namespace cohort::cli
