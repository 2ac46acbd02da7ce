// `cohort submit ...` renders a job script from sbatch/train.sbatch and submits it with sbatch.
// `cohort slurm requeue --config FILE [--set k=v ...] [--reason TEXT]`: for batch scripts. After a
// training step failed in a way a restart can cure (exit 76: a collective hung; 77: a rank or node
// was lost), the script asks for the job to be requeued through libslurm under the same restart
// policy `cohort supervise` applies (slurm.requeue, slurm.max_failures, the crash loop). Exit 0
// when the job was requeued, 75 when it was not (outside Slurm, not allowed, budget spent).
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cohort/env/environment.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/input.hpp"
#include "cohort/io/output.hpp"
#include "cohort/ops/decisions.hpp"
#include "cohort/ops/supervision.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/slurm/submit.hpp"
#include "command.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace cohort::cli {
namespace {

int requeue(const std::vector<std::string>& args) {
  std::string file, reason = "requeue asked";
  std::vector<std::string> overrides;
  po::options_description desc("cohort slurm requeue options");
  desc.add_options()("help,h", "show this help")("config,c", path_value(&file, PathKind::kFile),
                                                 "the training's INI file (its [slurm] keys)")(
      "set", po::value(&overrides)->composing(), "override: section.key=value (repeatable)")(
      "reason", po::value(&reason), "what happened, for the log line");
  const auto parsed = parse_or_help(
      args, desc, "usage: cohort slurm requeue --config FILE [--set k=v ...] [--reason TEXT]\n");
  if (!parsed) return 0;
  const auto config = settings::Config::load(file, overrides);
  const auto outcome = ops::requeue_after_failure(config, reason, env::Environment::from_process(),
                                                  [](const slurm::FailureRequeue& o) {
                                                    std::printf("%s\n", o.line.c_str());
                                                    std::fflush(stdout);
                                                  });
  return ops::requeue_exit(outcome);
}

// A job script template larger than this is refused before it is read.
constexpr std::int64_t kMaxTemplateBytes = std::int64_t{1} << 20;

// The job script template: --template, else the installed one next to this executable, else the
// source tree this binary was built from.
std::string default_template() {
  std::error_code error;
  const std::filesystem::path exe = env::executable_path().value_or("");
  const auto installed = exe.parent_path().parent_path() / "share/cohort/sbatch/train.sbatch";
  if (!exe.empty() && std::filesystem::exists(installed, error)) return installed.string();
  return std::string(COHORT_SOURCE_DIR) + "/sbatch/train.sbatch";
}

std::string read_text(const std::string& path) {
  return io::InputFile::open<UsageError>(path, kMaxTemplateBytes, "the job script template")
      .read_all();
}

}  // namespace

int run_submit(const std::vector<std::string>& args, int*, char***) {
  slurm::SubmitOptions o;
  std::string template_path = default_template();
  po::options_description desc("cohort submit options");
  desc.add_options()("help,h", "show this help")(
      "config,c", path_value(&o.config, PathKind::kFile)->required(), "the training's INI file")(
      "set", po::value(&o.overrides)->composing(), "override: section.key=value (repeatable)")(
      "nodes,N", po::value(&o.nodes)->default_value(1),
      "nodes to train on (the job asks for slurm.spare_nodes more)")(
      "tasks-per-node", po::value(&o.tasks_per_node)->default_value(1), "ranks per node")(
      "cpus-per-task", po::value(&o.cpus_per_task)->default_value(0), "0: the template's")(
      "gpus-per-node", po::value(&o.gpus_per_node)->default_value(0), "0: none")(
      "time,t", po::value(&o.time), "time limit, [D-]HH:MM:SS")(
      "partition,p", po::value(&o.partition), "partition")(
      "job-name,J", po::value(&o.job_name)->default_value(o.job_name), "job name")(
      "template", path_value(&template_path, PathKind::kFile),
      "job script template (default: sbatch/train.sbatch)")(
      "dry-run", "print the script instead of submitting it");
  const auto parsed =
      parse_or_help(args, desc,
                    "usage: cohort submit --config FILE [--set k=v ...] --nodes N "
                    "--tasks-per-node T [--gpus-per-node G] [--time HH:MM:SS] [--dry-run]\n");
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  const auto config = settings::Config::load(o.config, o.overrides);  // a bad one fails here
  o.spare_nodes = static_cast<int>(config.slurm.spare_nodes);
  o.config = std::filesystem::absolute(o.config).string();
  const std::string script = slurm::render_job_script(read_text(template_path), o);
  if (vm.count("dry-run")) {
    std::cout << script;
    return 0;
  }
  const std::string dir = config.train.run_dir;
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + o.job_name + ".sbatch";
  io::OutputPlan()
      .read(o.config, "--config")
      .read(template_path, "--template")
      .write(path, "the job script")
      .check();
  io::write_file_atomically(path, script);
  const std::string job = slurm::sbatch(path);
  std::printf("submitted job %s (script %s)\n", job.c_str(), path.c_str());
  return 0;
}

int run_slurm(const std::vector<std::string>& args, int*, char***) {
  const std::string sub = args.empty() ? "" : args[0];
  if (sub == "--help" || sub == "-h" || sub == "help") {
    std::cout << "usage: cohort slurm requeue --config FILE [--set k=v ...] [--reason TEXT]\n";
    return 0;
  }
  if (sub == "requeue") return requeue({args.begin() + 1, args.end()});
  COHORT_THROW(UsageError, "cohort slurm: unknown subcommand '", sub, "' (requeue)");
}

}  // namespace cohort::cli
