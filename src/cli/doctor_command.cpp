// `cohort doctor --config FILE [--set k=v ...] [--json] [--output FILE]`: pre-flight checks of the
// nodes a training will run on (cohort/ops/doctor.hpp), one task per node: `srun
// --ntasks-per-node=1 cohort doctor ...` in an allocation, or by itself on one machine. Rank 0
// prints the report (text, or JSON with --json) and writes it to --output; the exit status is 0
// or 80 + the first failing check (docs/exit-codes.md).
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "cohort/comm/mpi_session.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/output.hpp"
#include "cohort/ops/doctor.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/settings/config_paths.hpp"
#include "command.hpp"
#include "mpi_start.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace cohort::cli {

int run_doctor(const std::vector<std::string>& args, int* argc, char*** argv) {
  std::string file, output;
  std::vector<std::string> overrides;
  ops::DoctorOptions o;
  po::options_description desc("cohort doctor options");
  desc.add_options()("help,h", "show this help")("config,c", path_value(&file, PathKind::kFile),
                                                 "the training's INI file")(
      "set", po::value(&overrides)->composing(), "override: section.key=value (repeatable)")(
      "ranks", po::value(&o.ranks)->default_value(0),
      "the training's ranks (0: SLURM_NTASKS of the job, else 1)")(
      "ranks-per-node", po::value(&o.ranks_per_node)->default_value(0),
      "the training's ranks per node (0: ranks / nodes)")(
      "output", path_value(&output, PathKind::kOutputFile),
      "also write the JSON report to this file (rank 0)")("json", "print the report as JSON");
  const auto parsed =
      parse_or_help(args, desc,
                    "usage: cohort doctor --config FILE [--set k=v ...] [--json]\n"
                    "  one task per node: srun -N NODES --ntasks-per-node=1 cohort doctor ...\n");
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  const auto config = settings::Config::load(file, overrides);
  if (!output.empty()) {  // never over the config or a file the training reads
    io::OutputPlan plan;
    plan.read(file, "--config");
    settings::add_inputs(config, plan);
    plan.write(output, "--output").check();
  }
  const auto environment = env::Environment::from_process();
  auto topology = env::detect(environment);  // before MPI_Init
  if (o.ranks <= 0) o.ranks = static_cast<int>(environment.get_int("SLURM_NTASKS").value_or(1));
  const int nodes = std::max(
      1,
      static_cast<int>(environment.get_int("SLURM_JOB_NUM_NODES").value_or(topology.node_count)));
  if (o.ranks_per_node <= 0) o.ranks_per_node = std::max(1, (o.ranks + nodes - 1) / nodes);
  const std::string node = topology.host.empty() ? env::hostname() : topology.host;
  apply_start_delay(config, topology.rank);
  comm::MpiSession session(argc, argv, startup_limit(config));
  const auto report = ops::run_doctor(config, o, session, node);
  if (session.rank() != 0) return 0;
  const auto json = ops::to_json(report);
  if (!output.empty())
    io::write_file_atomically(output, json.dump(-1, ' ', true, kJsonReplace) + "\n");
  if (vm.count("json")) {
    std::cout << json.dump(2, ' ', true, kJsonReplace) << "\n";
  } else {
    std::cout << ops::to_text(report);
  }
  std::cout.flush();
  return report.exit_code();
}

}  // namespace cohort::cli
