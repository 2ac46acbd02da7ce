// The settings that select parameters by name (model.freeze, optim.lr_scale,
// model.init_prefix_map), parsed and checked without LibTorch, so that `cohort config check`
// (the light executable) validates them as `cohort train` does.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cohort::train {

// Why a regular expression (ECMAScript, std::regex) does not compile; empty when it does.
std::string regex_problem(const std::string& pattern);

// optim.lr_scale: "REGEX:FACTOR,..." (the factor after the last ':', >= 0).
std::string lr_scale_problem(const std::string& text);  // empty when well-formed
// ConfigError naming the key for a malformed item.
std::vector<std::pair<std::string, double>> parse_lr_scale(const std::string& text);

// model.init_prefix_map: "FROM:TO,...".
std::string prefix_map_problem(const std::string& text);  // empty when well-formed
std::vector<std::pair<std::string, std::string>> parse_prefix_map(const std::string& text);

}  // namespace cohort::train
