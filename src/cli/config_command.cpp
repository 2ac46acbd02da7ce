// `cohort config check FILE [--set section.key=value ...] | reference`: validates a trainer
// config and prints it resolved (every key, with its hash), or prints the reference page
// (docs/config.md is this output).
#include <boost/program_options.hpp>
#include <iostream>

#include "cohort/error.hpp"
#include "cohort/settings/config.hpp"
#include "command.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace cohort::cli {

int run_config(const std::vector<std::string>& args, int*, char*** argv) {
  const std::string usage =
      "usage: cohort config check [FILE] [--set section.key=value ...] [--plugin LIB ...]\n"
      "       cohort config reference     (the key table as Markdown: docs/config.md)\n";
  COHORT_CHECK(!args.empty(), UsageError,
               "config: which subcommand? (check or reference; cohort config --help)");
  const std::string sub = args.front();
  if (sub == "--help" || sub == "-h" || sub == "help") {
    std::cout << usage;
    return 0;
  }
  if (sub == "reference") {
    std::cout << settings::reference_markdown();
    return 0;
  }
  COHORT_CHECK(sub == "check", UsageError, "config: unknown subcommand '", sub,
               "' (check or reference; cohort config --help)");
  std::string file;
  std::vector<std::string> overrides;
  std::vector<std::string> plugins;
  po::options_description desc("cohort config check options");
  desc.add_options()("help,h", "show this help")("file", path_value(&file, PathKind::kFile),
                                                 "INI file")(
      "set", po::value(&overrides)->composing(), "override: section.key=value (repeatable)")(
      "plugin", path_value(&plugins, PathKind::kFile)->composing(),
      "a shared library of models: --set model.library=LIB (repeatable: a list)");
  po::positional_options_description positional;
  positional.add("file", 1);
  const auto parsed = parse_or_help(std::vector<std::string>(args.begin() + 1, args.end()), desc,
                                    usage, &positional);
  if (!parsed) return 0;
  for (auto& item : plugin_overrides(plugins)) overrides.push_back(std::move(item));
  const auto config = settings::Config::load(file, overrides);
  // The models of model.library and their sections are known only to an executable that can
  // load them; this one checked the rest and hands the whole check over.
  if (!config.model.library.empty() && !kTorchExecutable) exec_torch(*argv);
  std::cout << config.resolved_ini();
  return 0;
}

}  // namespace cohort::cli
