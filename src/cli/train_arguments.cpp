#include "train_arguments.hpp"

#include <boost/program_options.hpp>
#include <sstream>

#include "command.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace cohort::cli {

TrainArguments parse_train_arguments(const std::vector<std::string>& args) {
  TrainArguments out;
  std::vector<std::string> plugins;
  po::options_description desc("cohort train options");
  desc.add_options()("help,h", "show this help")("config,c", path_value(&out.file, PathKind::kFile),
                                                 "INI file (docs/config.md)")(
      "set", po::value(&out.overrides)->composing(), "override: section.key=value (repeatable)")(
      "plugin", path_value(&plugins, PathKind::kFile)->composing(),
      "a shared library of models: --set model.library=LIB (repeatable: a list)")(
      "json", "print the summary as JSON");
  po::positional_options_description positional;  // `cohort train job.ini` as --config
  positional.add("config", 1);
  const ParsedOptions parsed = parse_options(args, desc, &positional);
  out.help = parsed.help;
  if (out.help) {
    std::ostringstream text;
    text << "usage: cohort launch -n N -- cohort train --config FILE [--set k=v ...]\n" << desc;
    out.help_text = text.str();
    return out;
  }
  out.json = parsed.vm.count("json") != 0;
  for (auto& item : plugin_overrides(plugins)) out.overrides.push_back(std::move(item));
  return out;
}

}  // namespace cohort::cli
