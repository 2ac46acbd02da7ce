// The command table of the `cohort` executable. Each command parses its own arguments with
// Boost.Program_options and calls the library; no logic lives in cli/.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cohort::cli {

// For every dump() of --json output: text that is not UTF-8 (a path, an HDF5 attribute, a host
// name) becomes U+FFFD instead of stopping the command with nlohmann's type_error.
inline constexpr auto kJsonReplace = nlohmann::json::error_handler_t::replace;

struct Command {
  const char* name;
  const char* summary;
  // args excludes the program and command names. Returns the exit code.
  int (*run)(const std::vector<std::string>& args, int* argc, char*** argv);
};

const std::vector<Command>& commands();

int run_env(const std::vector<std::string>& args, int* argc, char*** argv);
int run_bench(const std::vector<std::string>& args, int* argc, char*** argv);
int bench_pipeline(const std::vector<std::string>& args, int* argc, char*** argv);
int run_config(const std::vector<std::string>& args, int* argc, char*** argv);
int run_data(const std::vector<std::string>& args, int* argc, char*** argv);
int run_train(const std::vector<std::string>& args, int* argc, char*** argv);
int run_ckpt(const std::vector<std::string>& args, int* argc, char*** argv);
int run_submit(const std::vector<std::string>& args, int* argc, char*** argv);
int run_supervise(const std::vector<std::string>& args, int* argc, char*** argv);
int run_slurm(const std::vector<std::string>& args, int* argc, char*** argv);
int run_report(const std::vector<std::string>& args, int* argc, char*** argv);
int run_top(const std::vector<std::string>& args, int* argc, char*** argv);
int run_launch(const std::vector<std::string>& args, int* argc, char*** argv);

}  // namespace cohort::cli
