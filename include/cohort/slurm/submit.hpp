// `cohort submit`: a training job script rendered from a template (sbatch/train.sbatch) and handed
// to sbatch.
//
// Rendering: the template's #SBATCH lines for the options given are replaced (or added after the
// last #SBATCH line), and right after its `set -uo pipefail` line a `set -- CONFIG ARGS...` line
// sets the script's arguments, every word single-quoted, so that no config value ever reaches a
// shell unquoted. Values that go into #SBATCH lines (sbatch parses those, not a shell) are
// checked against strict patterns instead; anything else is a UsageError naming the option.
#pragma once

#include <string>
#include <vector>

namespace cohort::slurm {

struct SubmitOptions {
  std::string config;                  // absolute path of the training INI
  std::vector<std::string> overrides;  // "section.key=value", passed as --set
  int nodes = 1;                       // the training step's
  int spare_nodes = 0;  // hot spares (slurm.spare_nodes): the job asks for nodes + spare_nodes
  int tasks_per_node = 1;
  int cpus_per_task = 0;  // 0: the template's
  int gpus_per_node = 0;  // 0: none asked
  std::string time;       // "" : the template's; else [D-]HH:MM:SS, MM, ...
  std::string partition;  // "" : the cluster's default
  std::string job_name = "cohort-train";
};

// 'it'\''s': a word any POSIX shell reads back exactly.
std::string shell_quote(const std::string& word);

std::string render_job_script(const std::string& template_text, const SubmitOptions& options);

// Runs `sbatch --parsable SCRIPT` (no shell in between); returns the job id. SlurmError with
// sbatch's message when it fails.
std::string sbatch(const std::string& script_path);

}  // namespace cohort::slurm
