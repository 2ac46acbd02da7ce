#include <map>

#include "cohort/error.hpp"
#include "cohort/train/config.hpp"
#include "cohort/train/model.hpp"

namespace cohort::train {
namespace {

std::map<std::string, ModelFactory>& registry() {
  static std::map<std::string, ModelFactory> models;
  return models;
}

}  // namespace

bool register_model(const std::string& name, ModelFactory factory) {
  COHORT_CHECK(registry().emplace(name, std::move(factory)).second, Error, "model '", name,
               "' registered twice");
  return true;
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

std::shared_ptr<Model> build_model(const Config& config, const ModelInput& input) {
  const std::string& name = config.get_string("model.name");
  const auto it = registry().find(name);
  COHORT_CHECK(it != registry().end(), ConfigError, "model.name: no model '", name,
               "' is built in");
  return it->second(config, input);
}

std::int64_t parameter_count(const torch::nn::Module& module) {
  std::int64_t count = 0;
  for (const auto& p : module.parameters()) count += p.numel();
  return count;
}

}  // namespace cohort::train
