// `cohort-torch <command> ...`: the commands that need LibTorch (kTorchCommands), which `cohort`
// hands over by execv with its own arguments. Users run `cohort`; this one refuses the rest.
#include <string>
#include <vector>

#include "cohort/error.hpp"
#include "cohort/ops/torch_runtime.hpp"
#include "command.hpp"

namespace cohort::cli {

const bool kTorchExecutable = true;

namespace {

struct TorchEntry {
  const char* command;
  int (*run)(const std::vector<std::string>& args, int* argc, char*** argv);
};

// Each kTorchCommands entry's function: the subcommand, if any, stays in args.
constexpr TorchEntry kEntries[] = {
    {"env", run_env},          {"train", run_train},
    {"doctor", run_doctor},    {"predict", run_predict},
    {"eval", run_eval},        {"bench", run_bench},
    {"ckpt", run_ckpt_export}, {"data", run_data_split},
    {"config", run_config},  // `config check` of a config that loads
                             // model libraries
};

int dispatch(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const bool config_check = args.size() > 1 && args[0] == "config" && args[1] == "check";
  COHORT_CHECK(needs_torch(args) || config_check, UsageError,
               "cohort-torch runs only the commands that need LibTorch; run: cohort ",
               args.empty() ? std::string("help") : args.front());
  ops::guard_convolutions();  // before any convolution; `cohort env` reports it
  for (const auto& entry : kEntries) {
    if (args.front() == entry.command) {
      return entry.run(std::vector<std::string>(args.begin() + 1, args.end()), &argc, &argv);
    }
  }
  COHORT_THROW(Error, "cohort-torch: no entry for '", args.front(), "'");
}

}  // namespace
}  // namespace cohort::cli

int main(int argc, char** argv) {
  return cohort::cli::exit_status_of(cohort::cli::dispatch, argc, argv);
}
