// What both executables share: which commands need LibTorch, the hand-over from `cohort` to
// `cohort-torch`, and the mapping of errors to exit codes.
#include <unistd.h>

#include <boost/program_options/errors.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "cohort/env/step_marker.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/error.hpp"
#include "cohort/io/terminal.hpp"
#include "cohort/io/text.hpp"
#include "command.hpp"
#include "launch_record.hpp"

namespace cohort::cli {

bool needs_torch(const std::vector<std::string>& args) {
  if (args.empty()) return false;
  for (const auto& entry : kTorchCommands) {
    if (args[0] != entry.command) continue;
    if (entry.subcommand[0] == '\0') return true;
    if (args.size() > 1 && args[1] == entry.subcommand) return true;
  }
  return false;
}

std::vector<std::string> plugin_overrides(const std::vector<std::string>& plugins) {
  if (plugins.empty()) return {};
  std::string list;
  for (const auto& plugin : plugins) list += (list.empty() ? "" : ",") + plugin;
  return {"model.library=" + list};
}

std::string self_executable() {
  auto self = env::executable_path();
  COHORT_CHECK(self.has_value(), EnvironmentError, "cannot read /proc/self/exe");
  return std::move(*self);
}

void exec_torch(char** argv) {
  // Next to this executable, as installed (bin/) and as built (the build directory).
  const std::string self = self_executable();
  const std::string helper = self.substr(0, self.rfind('/') + 1) + "cohort-torch";
  io::flush_printable_output();  // what this process printed, before the other one prints
  std::fflush(stdout);
  execv(helper.c_str(), argv);
  COHORT_THROW(EnvironmentError, helper, ": cannot run the LibTorch part of cohort (",
               std::strerror(errno), "); the installation is incomplete");
}

namespace {

// One line on stderr, once per launch (launch_record.hpp): every rank of a launch that fails
// alike says the same line, and the user reads it once. Every error passes here, so the text it
// carries from files, names and the environment (a path, a tensor or class name, an option a
// user typed) is made printable here, once: no control character or invalid UTF-8 reaches the
// terminal, and the line stays one line.
void print_error_line(const std::string& line) {
  const std::string text = io::printable(line);
  if (claim_error_line(text)) std::fprintf(stderr, "%s\n", text.c_str());
}

int report(int code, const std::string& line) {
  print_error_line(line);
  return code;
}

int exit_status_of_body(int (*body)(int, char**), int argc, char** argv) {
  try {
    return body(argc, argv);
  } catch (const Error& error) {
    return report(static_cast<int>(error.exit_code()),
                  std::string("cohort: error: ") + error.what());
  } catch (const boost::program_options::error& error) {
    return report(static_cast<int>(ExitCode::kUsage),  // docs/exit-codes.md: one form for all
                  std::string("cohort: error: ") + error.what());
  } catch (const std::exception& error) {
    return report(static_cast<int>(ExitCode::kInternal),
                  std::string("cohort: internal error (please report): ") + error.what());
  }
}

}  // namespace

int exit_status_of(int (*body)(int, char**), int argc, char** argv) {
  // Everything the process prints is printable from here on (C's stdio and iostreams alike).
  io::install_printable_output();
  const int code = exit_status_of_body(body, argc, argv);
  record_exit_code(code);
  // A rank of a supervised step that ends it for a hang, a lost peer or a node fault says so at
  // once (env/step_marker.hpp), so that supervise does not wait for srun to give up on the rest.
  if (code == static_cast<int>(ExitCode::kWatchdog) ||
      code == static_cast<int>(ExitCode::kPeerLost) ||
      code == static_cast<int>(ExitCode::kNodeFault)) {
    env::mark_step_failed(code);
  }
  return code;
}

}  // namespace cohort::cli
