// How every command reads its options, so that --help and required options behave alike in all.
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/positional_options.hpp>
#include <boost/program_options/variables_map.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cohort::cli {

// Every command reads its options here: store, then --help, then notify, so that --help answers
// without the required options and before any option is acted on. Boost's errors propagate (the
// caller's exit_status_of maps them to exit 2). It adds no option: each desc declares "help,h"
// itself where its --help shows it today.
struct ParsedOptions {
  boost::program_options::variables_map vm;
  bool help = false;
};
ParsedOptions parse_options(
    const std::vector<std::string>& args, const boost::program_options::options_description& desc,
    const boost::program_options::positional_options_description* positional = nullptr);

// The same; for --help it prints `usage` verbatim and then `shown` (default: desc) to stdout and
// returns nullopt (the caller returns 0).
std::optional<boost::program_options::variables_map> parse_or_help(
    const std::vector<std::string>& args, const boost::program_options::options_description& desc,
    std::string_view usage,
    const boost::program_options::positional_options_description* positional = nullptr,
    const boost::program_options::options_description* shown = nullptr);

}  // namespace cohort::cli
