// The arguments of `cohort train`, parsed in one place for the command itself (cohort-torch) and
// for `cohort launch`, which checks a training run's configuration once before starting ranks.
#pragma once

#include <string>
#include <vector>

namespace cohort::cli {

struct TrainArguments {
  std::string file;                    // --config, or the first positional argument
  std::vector<std::string> overrides;  // --set, then --plugin's model.library
  bool json = false;
  bool help = false;
  std::string help_text;  // the usage line and options, for --help
};

// Throws boost::program_options errors (a usage error, exit 2) for arguments train refuses.
TrainArguments parse_train_arguments(const std::vector<std::string>& args);

}  // namespace cohort::cli
