#include "settings/name_patterns.hpp"

#include <re2/re2.h>

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "cohort/error.hpp"

namespace cohort::settings {
namespace {

std::unique_ptr<re2::RE2> compile(const std::string& pattern, std::string& problem) {
  if (pattern.size() > kMaxPatternBytes) {
    problem = "a pattern of " + std::to_string(pattern.size()) + " bytes, more than " +
              std::to_string(kMaxPatternBytes);
    return nullptr;
  }
  re2::RE2::Options options;
  options.set_log_errors(false);  // the error comes back as one line, not on stderr
  options.set_max_mem(kMaxPatternMemory);
  auto re = std::make_unique<re2::RE2>(pattern, options);
  if (!re->ok()) problem = "not a regular expression (" + re->error() + ")";
  return re;
}

}  // namespace

std::string regex_problem(const std::string& pattern) {
  std::string problem;
  compile(pattern, problem);
  return problem;
}

NamePattern::NamePattern(const std::string& pattern, const char* key) {
  std::string problem;
  re_ = compile(pattern, problem);
  COHORT_CHECK(problem.empty(), ConfigError, key, ": '", pattern, "': ", problem);
}

NamePattern::~NamePattern() = default;
NamePattern::NamePattern(NamePattern&&) noexcept = default;
NamePattern& NamePattern::operator=(NamePattern&&) noexcept = default;

bool NamePattern::found_in(const std::string& name) const {
  return re2::RE2::PartialMatch(name, *re_);
}

namespace {

// One "REGEX:FACTOR" item; the problem's text when it is malformed.
std::string parse_item(const std::string& item, std::pair<std::string, double>& out) {
  const auto colon = item.rfind(':');
  const std::string factor = colon == std::string::npos ? "" : item.substr(colon + 1);
  char* end = nullptr;
  const double value = std::strtod(factor.c_str(), &end);
  if (colon == std::string::npos || colon == 0 || factor.empty() ||
      end != factor.c_str() + factor.size() || !std::isfinite(value) || value < 0) {
    return "'" + item + "' is not REGEX:FACTOR (a factor >= 0, items separated by commas)";
  }
  out = {item.substr(0, colon), value};
  const std::string problem = regex_problem(out.first);
  return problem.empty() ? "" : "'" + out.first + "': " + problem;
}

}  // namespace

std::string lr_scale_problem(const std::string& text) {
  std::istringstream in(text);
  std::pair<std::string, double> parsed;
  for (std::string item; std::getline(in, item, ',');) {
    const std::string problem = parse_item(item, parsed);
    if (!problem.empty()) return problem;
  }
  return "";
}

std::vector<std::pair<std::string, double>> parse_lr_scale(const std::string& text) {
  std::vector<std::pair<std::string, double>> items;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    items.emplace_back();
    const std::string problem = parse_item(item, items.back());
    COHORT_CHECK(problem.empty(), ConfigError, "optim.lr_scale: ", problem);
  }
  return items;
}

std::string prefix_map_problem(const std::string& text) {
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const auto colon = item.find(':');
    if (colon == std::string::npos || item.find(':', colon + 1) != std::string::npos) {
      return "'" + item + "' is not FROM:TO";
    }
  }
  return "";
}

std::vector<std::pair<std::string, std::string>> parse_prefix_map(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> map;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const auto colon = item.find(':');
    COHORT_CHECK(colon != std::string::npos && item.find(':', colon + 1) == std::string::npos,
                 ConfigError, "model.init_prefix_map: '", item, "' is not FROM:TO");
    map.emplace_back(item.substr(0, colon), item.substr(colon + 1));
  }
  return map;
}

}  // namespace cohort::settings
