#include <ATen/ops/zeros.h>

#include <cstring>
#include <map>

#include "cohort/comm/communicator.hpp"

#include "cohort/error.hpp"
#include "cohort/models/model.hpp"
#include "cohort/pipeline/tensor_parallel.hpp"
#include "models/build_budget.hpp"
#include "settings/model_catalog.hpp"

namespace cohort::models {

// The run's settings by their own names.
using namespace ::cohort::settings;  // NOLINT(google-build-using-namespace)

namespace {

std::map<std::string, ModelFactory>& registry() {
  static std::map<std::string, ModelFactory> models;
  return models;
}

}  // namespace

bool register_model(const std::string& name, const ModelOptionsTable& options, ModelFactory factory,
                    const char* abi) {
  // The tag first: a library of another Cohort must not reach its options or its factory.
  std::string problem;
  if (std::strcmp(abi, COHORT_MODEL_ABI) != 0) {
    problem = std::string("it was built for ") + abi + "; this is " + COHORT_MODEL_ABI;
  } else {
    problem = catalog::add_model(name, &options);
  }
  if (!problem.empty()) {
    COHORT_CHECK(catalog::loading(), Error, problem);
    catalog::record(problem);
    return false;
  }
  COHORT_CHECK(registry().emplace(name, std::move(factory)).second, Error, "model '", name,
               "' registered twice");
  return true;
}

bool register_model(const std::string& name, ModelFactory factory, const char* abi) {
  return register_model(name, ModelOptionsTable{}, std::move(factory), abi);
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

namespace {

// "sample [1, 28, 28], 10 outputs", "vocab_size 50257, seq_len 1024, ...": for a refusal.
std::string built_from(const ModelInput& input) {
  std::string text;
  const auto add = [&](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
  if (input.vocab_size > 0) {
    add("vocab_size " + std::to_string(input.vocab_size));
    add("seq_len " + std::to_string(input.seq_len));
  } else if (!input.sample_shape.empty()) {
    std::string shape;
    for (const auto d : input.sample_shape)
      shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    add("sample [" + shape + "]");
  }
  for (const auto& field : input.fields) {
    if (field.vocab_size > 0) add(field.name + " vocab_size " + std::to_string(field.vocab_size));
  }
  add(std::to_string(input.outputs) + " outputs");
  return text;
}

}  // namespace

std::shared_ptr<Model> build_model(const ModelConfig& config, const ModelInput& input) {
  const std::string& name = config.name;
  const auto it = registry().find(name);
  COHORT_CHECK(it != registry().end(), ConfigError, "model.name: no model '", name,
               "' (built in: ", kBuiltinModels, "; others come from model.library)");
  std::shared_ptr<Model> model;
  // What the model is built from decides its memory, and a dataset's claims (vocab_size,
  // classes, seq_len) are outside input: each allocation is checked against the budget first.
  const BuildBudget budget(BuildBudget::bytes_for(config.max_build_gib), input.skeleton,
                           "model " + name + " (" + built_from(input) + ")");
  const ModelOptionsTable* options = catalog::options_of(name);
  if (options != nullptr && config.options == nullptr) {
    // A ModelConfig not made by Config::load (a program's own): the section at its defaults.
    ModelConfig with_defaults = config;
    with_defaults.options = catalog::make_options(
        *options, [](const KeySpec& spec) { return std::string(spec.default_value); });
    model = it->second(with_defaults, input);
  } else {
    model = it->second(config, input);
  }
  COHORT_CHECK(model != nullptr, ConfigError, "model.name = ", name,
               ": its factory built no model");
  COHORT_CHECK(input.tensor_group == nullptr || input.tensor_group->size() == 1 ||
                   !pipeline::split_parameter_names(*model).empty(),
               ConfigError,
               "parallel.tensor = ", input.tensor_group ? input.tensor_group->size() : 1,
               ": model ", name, " has no tensor-parallel layers (model gpt has)");
  return model;
}

at::Tensor run_blocks(const std::vector<pipeline::BlockSpec>& blocks, const at::Tensor& inputs) {
  at::Tensor x = inputs;
  for (const auto& block : blocks) x = block.forward(x);
  return x;
}

at::Tensor sample_input(const ModelInput& input) {
  std::vector<std::int64_t> shape{1};
  if (input.vocab_size > 0) {
    shape.push_back(input.seq_len);
    return at::zeros(shape, at::kLong);
  }
  shape.insert(shape.end(), input.sample_shape.begin(), input.sample_shape.end());
  return at::zeros(shape, at::kFloat);
}

std::int64_t parameter_count(const torch::nn::Module& module) {
  std::int64_t count = 0;
  for (const auto& p : module.parameters()) count += p.numel();
  return count;
}

}  // namespace cohort::models
