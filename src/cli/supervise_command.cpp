// `cohort supervise --config FILE [--set k=v ...] [-n N]`: the whole body of a self-requeueing
// batch script (ops/supervise.hpp: the pre-flight, the training step with the batch shell's
// signals passed on, the requeue after a failure a restart can cure). Exit code: the step's, or
// 0 after a requeue; a pre-flight that requeued or failed says its own.
#include <boost/program_options.hpp>
#include <cstdio>

#include "cohort/error.hpp"
#include "cohort/ops/supervise.hpp"
#include "cohort/settings/config.hpp"
#include "command.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace cohort::cli {

int run_supervise(const std::vector<std::string>& args, int*, char***) {
  std::string file;
  std::vector<std::string> overrides;
  int ranks = 0;
  po::options_description desc("cohort supervise options");
  desc.add_options()("help,h", "show this help")(
      "config,c", path_value(&file, PathKind::kFile)->required(), "the training's INI file")(
      "set", po::value(&overrides)->composing(), "override: section.key=value (repeatable)")(
      "ranks,n", po::value(&ranks)->default_value(0),
      "ranks (0: SLURM_NTASKS, else 1; with slurm.spare_nodes, the step's nodes x tasks per node)");
  const auto parsed =
      parse_or_help(args, desc, "usage: cohort supervise --config FILE [--set k=v ...] [-n N]\n");
  if (!parsed) return 0;
  const auto config = settings::Config::load(file, overrides);  // a bad one fails before the step
  const ops::StepCommand command{self_executable(), file, overrides};
  return ops::supervise(config, command, ranks, [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  });
}

}  // namespace cohort::cli
