// parse_options and parse_or_help (options.hpp): the option parsing every command shares.
#include "options.hpp"

#include <boost/program_options/parsers.hpp>
#include <iostream>
#include <utility>

namespace po = boost::program_options;

namespace cohort::cli {

ParsedOptions parse_options(const std::vector<std::string>& args,
                            const po::options_description& desc,
                            const po::positional_options_description* positional) {
  ParsedOptions out;
  po::command_line_parser parser(args);
  parser.options(desc);
  if (positional != nullptr) parser.positional(*positional);
  po::store(parser.run(), out.vm);
  out.help = out.vm.count("help") != 0;
  // notify runs the required checks and the notifiers: --help needs neither.
  if (!out.help) po::notify(out.vm);
  return out;
}

std::optional<po::variables_map> parse_or_help(const std::vector<std::string>& args,
                                               const po::options_description& desc,
                                               std::string_view usage,
                                               const po::positional_options_description* positional,
                                               const po::options_description* shown) {
  ParsedOptions parsed = parse_options(args, desc, positional);
  if (parsed.help) {
    std::cout << usage << (shown != nullptr ? *shown : desc);
    return std::nullopt;
  }
  return std::move(parsed.vm);
}

}  // namespace cohort::cli
