// The command tables of the two executables behind the one `cohort` command. Each command parses
// its own arguments with Boost.Program_options and calls the library; no logic lives in cli/.
//
// `cohort` itself links no LibTorch: it runs the light commands (help, config, ckpt list|inspect|
// verify, data inspect, report, top, submit, ...) in process, and replaces itself (execv, same
// pid, same arguments) with `cohort-torch`, installed next to it, for the commands in
// kTorchCommands. `cohort-torch` runs only those. docs/building.md, "The two executables".
#pragma once

#include <boost/program_options/value_semantic.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cohort/settings/config.hpp"

namespace boost::program_options {
class options_description;
}
namespace cohort::train {
struct ModelSource;
}

namespace cohort::cli {

// For every dump() of --json output, with ensure_ascii: text that is not UTF-8 (a path, an HDF5
// attribute, a host name) becomes U+FFFD instead of stopping the command with nlohmann's
// type_error, and every other character outside ASCII an escape, so that the printable output
// (io/terminal.hpp) passes the JSON unchanged.
inline constexpr auto kJsonReplace = nlohmann::json::error_handler_t::replace;

// What an option that names a path names, shown by --help in place of Boost's "arg": FILE, DIR,
// PATH (a file or a directory) are read; OUT and OUTDIR are written. Every path option is declared
// through path_value(), so that tests/hostile/path_classes.py, which reads every command's --help,
// tries its hostile paths (a FIFO, a directory, a link to nothing, a non-UTF-8 name, ...) on a
// new command's paths without anyone adding them to a list.
enum class PathKind { kFile, kDirectory, kFileOrDirectory, kOutputFile, kOutputDirectory };

template <class T>
boost::program_options::typed_value<T>* path_value(T* target, PathKind kind) {
  static constexpr const char* kNames[] = {"FILE", "DIR", "PATH", "OUT", "OUTDIR"};
  return boost::program_options::value(target)->value_name(kNames[static_cast<int>(kind)]);
}

struct Command {
  const char* name;
  const char* summary;
  // args excludes the program and command names. Returns the exit code.
  int (*run)(const std::vector<std::string>& args, int* argc, char*** argv);
};

// The commands of `cohort help`, in its order; run is null for those that cohort-torch runs.
const std::vector<Command>& commands();

// A command, or one subcommand of it, that needs LibTorch. An empty subcommand: all of them.
struct TorchCommand {
  const char* command;
  const char* subcommand;
};
inline constexpr TorchCommand kTorchCommands[] = {
    {"env", ""},    {"train", ""},      {"predict", ""},   {"eval", ""},       {"bench", ""},
    {"doctor", ""}, {"ckpt", "export"}, {"data", "split"}, {"data", "select"},
};

// Whether `cohort ARGS...` (args: argv[1..]) runs in cohort-torch.
bool needs_torch(const std::vector<std::string>& args);
// Whether this is cohort-torch. `cohort config check` of a config that loads model libraries
// (model.library, --plugin) is handed over too: only an executable with LibTorch can load them.
extern const bool kTorchExecutable;

// --plugin FILE (repeatable), as the override of model.library that it is ("" when none).
std::vector<std::string> plugin_overrides(const std::vector<std::string>& plugins);

// The path of this executable (/proc/self/exe); EnvironmentError when it cannot be read.
std::string self_executable();

// Replaces this process with `cohort-torch` (next to /proc/self/exe) and the same arguments.
// Throws EnvironmentError when it is missing or cannot be run.
[[noreturn]] void exec_torch(char** argv);

// Runs body, mapping what it throws to the documented exit codes with one line on stderr
// (docs/exit-codes.md): the one place where errors become exit statuses, for both executables.
int exit_status_of(int (*body)(int, char**), int argc, char** argv);

// --task of predict and eval (a TorchScript model): UsageError naming the choices.
settings::TaskKind parse_task(const std::string& text);
// The options naming the trained model of predict and eval: --checkpoint, --config, --model,
// --task (into `task`, for parse_task).
void add_model_source_options(boost::program_options::options_description& desc,
                              train::ModelSource& model, std::string& task);

// cohort-torch's commands.
int run_env(const std::vector<std::string>& args, int* argc, char*** argv);
int run_bench(const std::vector<std::string>& args, int* argc, char*** argv);
int bench_pipeline(const std::vector<std::string>& args, int* argc, char*** argv);
int bench_zero(const std::vector<std::string>& args, int* argc, char*** argv);
int bench_topology(const std::vector<std::string>& args);
int bench_control(const std::vector<std::string>& args, int* argc, char*** argv);
int run_train(const std::vector<std::string>& args, int* argc, char*** argv);
int run_doctor(const std::vector<std::string>& args, int* argc, char*** argv);
int run_predict(const std::vector<std::string>& args, int* argc, char*** argv);
int run_eval(const std::vector<std::string>& args, int* argc, char*** argv);
int run_ckpt_export(const std::vector<std::string>& args, int* argc, char*** argv);
int run_data_split(const std::vector<std::string>& args, int* argc, char*** argv);

// cohort's own.
int run_config(const std::vector<std::string>& args, int* argc, char*** argv);
int run_data(const std::vector<std::string>& args, int* argc, char*** argv);
int run_ckpt(const std::vector<std::string>& args, int* argc, char*** argv);
int run_submit(const std::vector<std::string>& args, int* argc, char*** argv);
int run_supervise(const std::vector<std::string>& args, int* argc, char*** argv);
int run_slurm(const std::vector<std::string>& args, int* argc, char*** argv);
int run_report(const std::vector<std::string>& args, int* argc, char*** argv);
int run_top(const std::vector<std::string>& args, int* argc, char*** argv);
int run_launch(const std::vector<std::string>& args, int* argc, char*** argv);

}  // namespace cohort::cli
