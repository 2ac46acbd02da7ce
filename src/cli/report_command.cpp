// `cohort report RUN_DIR [-o FILE] [--json]` and `cohort top RUN_DIR [--once] [--interval S]`:
// read a run directory's metrics.jsonl (monitor::RunHistory) and render it.
#include <sys/ioctl.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/output.hpp"
#include "cohort/io/terminal.hpp"
#include "cohort/monitor/report.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/train/monitoring.hpp"
#include "command.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace cohort::cli {
namespace {

// The thresholds the run was started with (its config.resolved.ini), else the defaults.
monitor::Thresholds run_thresholds(const std::string& dir) {
  const std::string ini = dir + "/config.resolved.ini";
  if (!std::filesystem::exists(ini)) return monitor::Thresholds{};
  try {
    return train::diagnosis_thresholds(settings::Config::load(ini, {}).monitor);
  } catch (const ConfigError& e) {  // another version's file: the figures are still readable
    std::fprintf(stderr, "cohort: warning: %s; the diagnosis uses the default thresholds\n",
                 e.what());
    return monitor::Thresholds{};
  }
}

po::variables_map parse(const std::vector<std::string>& args, po::options_description& desc,
                        std::string& dir) {
  desc.add_options()("help,h", "show this help")("run-dir", path_value(&dir, PathKind::kDirectory),
                                                 "the run directory");
  po::positional_options_description positional;
  positional.add("run-dir", 1);
  return parse_options(args, desc, &positional).vm;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

int run_report(const std::vector<std::string>& args, int*, char***) {
  std::string dir, output;
  std::vector<std::string> eval_files;
  po::options_description desc(
      "usage: cohort report RUN_DIR [-o FILE] [--eval E.json ...] [--json]");
  desc.add_options()("output,o", path_value(&output, PathKind::kOutputFile),
                     "HTML file (default RUN_DIR/report.html)")(
      "eval", path_value(&eval_files, PathKind::kFile)->composing(),
      "a `cohort eval --json` record to show: metrics, per-class accuracy, confusion matrix "
      "(repeatable)")("json", "print the findings and the file written as JSON");
  const auto vm = parse(args, desc, dir);
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  COHORT_CHECK(!dir.empty(), UsageError, "report: which run directory? (cohort report --help)");
  if (output.empty()) output = dir + "/report.html";
  const auto history = monitor::load_run(dir);
  const auto thresholds = run_thresholds(dir);
  std::vector<monitor::EvalRecord> evaluations;
  for (const auto& file : eval_files) evaluations.push_back(monitor::read_eval_record(file));
  {
    io::OutputPlan plan;  // what the report read: never written over
    plan.read(dir + "/metrics.jsonl", "RUN_DIR's metrics")
        .read(dir + "/config.resolved.ini", "RUN_DIR's config");
    for (const auto& file : eval_files) plan.read(file, "--eval");
    plan.write(output, "--output").check();
  }
  {
    // Rendered first, then written beside the target and renamed: a failure leaves the previous
    // report whole, never a truncated one.
    io::write_file_atomically(output, monitor::render_report(history, thresholds, evaluations));
  }
  const auto findings = monitor::rediagnose(history, thresholds);
  if (vm.count("json")) {
    std::cout << monitor::report_json(output, history, findings).dump(2, ' ', true, kJsonReplace)
              << "\n";
    return 0;
  }
  std::cout << "report: " << output << "\n";
  for (const auto& f : findings) std::cout << "diagnosis: " << f.message << "\n";
  return 0;
}

int run_top(const std::vector<std::string>& args, int*, char***) {
  std::string dir;
  double interval = 1;
  po::options_description desc("usage: cohort top RUN_DIR [--once] [--interval S]");
  desc.add_options()("once", "print one frame and exit")("interval", po::value(&interval),
                                                         "seconds between refreshes (default 1)");
  const auto vm = parse(args, desc, dir);
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  COHORT_CHECK(!dir.empty(), UsageError, "top: which run directory? (cohort top --help)");
  COHORT_CHECK(interval > 0, UsageError, "top: --interval must be positive");
  monitor::RunFollower follower(dir);
  const auto thresholds = run_thresholds(dir);
  const bool tty = isatty(STDOUT_FILENO) != 0;
  bool first = true;
  for (;;) {
    const bool changed = follower.poll();
    if (changed || first || tty) {
      winsize ws{};
      const int width = tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
      const std::string frame =
          monitor::render_top(follower.history(), thresholds, unix_now(), width);
      if (tty) io::write_control(stdout, "\033[H\033[2J");  // home, clear: top's own
      std::cout << (tty || first ? "" : "\n") << frame << std::flush;
    }
    first = false;
    if (vm.count("once") || follower.history().end.is_object()) return 0;
    std::this_thread::sleep_for(std::chrono::duration<double>(interval));
  }
}

}  // namespace cohort::cli
