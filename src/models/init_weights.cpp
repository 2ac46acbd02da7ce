#include "models/init_weights.hpp"

#include <c10/core/GradMode.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "cohort/ckpt/weights.hpp"
#include "cohort/error.hpp"
#include "cohort/io/dtype.hpp"
#include "settings/name_patterns.hpp"

namespace cohort::models {

// The run's settings by their own names.
using namespace ::cohort::settings;  // NOLINT(google-build-using-namespace)

namespace {

std::string renamed(const std::string& name,
                    const std::vector<std::pair<std::string, std::string>>& map) {
  for (const auto& [from, to] : map) {
    if (name.rfind(from, 0) == 0) return to + name.substr(from.size());
  }
  return name;
}

// "a, b, c (and 4 more)".
std::string first_few(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size() && i < 3; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > 3) text += " (and " + std::to_string(names.size() - 3) + " more)";
  return text;
}

}  // namespace

std::string InitReport::text() const {
  std::string line = "init_from " + source + ": loaded " + std::to_string(loaded) + " tensor(s)";
  if (!skipped.empty()) line += "; skipped (model.init_skip): " + first_few(skipped);
  if (!missing.empty()) line += "; missing, kept as initialised: " + first_few(missing);
  if (!unexpected.empty()) line += "; unexpected, ignored: " + first_few(unexpected);
  if (!mismatched.empty()) line += "; of another shape, kept: " + first_few(mismatched);
  return line;
}

InitReport init_weights(torch::nn::Module& model, const ModelConfig& config) {
  const auto weights = ckpt::read_weights(config.init_from);
  const auto map = parse_prefix_map(config.init_prefix_map);
  std::map<std::string, at::Tensor> source;
  InitReport report;
  report.source = weights.source;
  for (const auto& [name, tensor] : weights.tensors) source[renamed(name, map)] = tensor;
  const NamePattern skip(config.init_skip, "model.init_skip");  // checked at load
  c10::AutoGradMode no_grad(false);  // copy_ into parameters that require gradients
  const auto take = [&](const std::string& name, at::Tensor& target) {
    if (!config.init_skip.empty() && skip.found_in(name)) {
      source.erase(name);
      return report.skipped.push_back(name);
    }
    const auto it = source.find(name);
    if (it == source.end()) return report.missing.push_back(name);
    if (it->second.sizes() != target.sizes()) {
      report.mismatched.push_back(name + " " + io::shape_text(it->second.sizes().vec()) +
                                  " in the file, " + io::shape_text(target.sizes().vec()) +
                                  " in the model");
    } else {
      target.copy_(it->second);
      ++report.loaded;
    }
    source.erase(it);
  };
  for (auto& p : model.named_parameters()) take(p.key(), p.value());
  for (auto& b : model.named_buffers()) take(b.key(), b.value());
  for (const auto& entry : source) report.unexpected.push_back(entry.first);
  const bool exact =
      report.missing.empty() && report.unexpected.empty() && report.mismatched.empty();
  COHORT_CHECK(report.loaded > 0, ConfigError, "model.init_from = ", config.init_from,
               ": no tensor of it fits the model by name and shape (the model's: ",
               first_few(report.missing), "; the file's: ", first_few(report.unexpected),
               "; model.init_prefix_map renames prefixes)");
  COHORT_CHECK(exact || !config.init_strict, ConfigError, "model.init_from = ", config.init_from,
               ": not this model (model.init_strict): ", report.missing.size(), " missing (",
               first_few(report.missing), "), ", report.unexpected.size(), " unexpected (",
               first_few(report.unexpected), "), ", report.mismatched.size(), " of another shape (",
               first_few(report.mismatched), ")");
  return report;
}

int freeze_parameters(torch::nn::Module& model, const std::string& regex) {
  const NamePattern pattern(regex, "model.freeze");  // checked at load (config_rules)
  int frozen = 0;
  std::vector<std::string> names;
  for (auto& p : model.named_parameters()) {
    names.push_back(p.key());
    if (!pattern.found_in(p.key())) continue;
    p.value().set_requires_grad(false);
    ++frozen;
  }
  COHORT_CHECK(frozen > 0, ConfigError, "model.freeze = '", regex,
               "' matches no parameter (the model's: ", first_few(names), ")");
  return frozen;
}

std::vector<std::shared_ptr<torch::nn::Module>> frozen_statistics_modules(
    const torch::nn::Module& model) {
  std::vector<std::shared_ptr<torch::nn::Module>> held;
  for (const auto& item : model.named_modules()) {
    const auto& module = *item.value();
    bool statistics = false;
    for (const auto& b : module.named_buffers(/*recurse=*/false)) {
      statistics = statistics || b.key().rfind("running_", 0) == 0;
    }
    const auto params = module.parameters(/*recurse=*/false);
    const bool frozen =
        !params.empty() &&
        std::none_of(params.begin(), params.end(), [](const auto& p) { return p.requires_grad(); });
    if (statistics && frozen) held.push_back(item.value());
  }
  return held;
}

}  // namespace cohort::models
