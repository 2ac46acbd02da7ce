// Models, built from config through one registry: a new model is one file in src/train/models/
// that calls COHORT_REGISTER_MODEL. A model is a torch::nn::Module whose forward() maps a batch of
// inputs to logits: [B, classes] for classification, [B, L, vocab] for token models.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace cohort::train {

class Config;

// What the dataset says about a model's inputs and outputs.
struct ModelInput {
  std::vector<std::int64_t> sample_shape;  // one input sample
  std::int64_t classes = 0;                // classification: outputs
  std::int64_t vocab_size = 0;             // token models
  std::int64_t seq_len = 0;
};

class Model : public torch::nn::Module {
 public:
  virtual at::Tensor forward(const at::Tensor& inputs) = 0;
  // Forward + backward FLOPs of one training sample, for the monitor's FLOP/s and MFU; 0 when
  // the model does not say.
  virtual double train_flops_per_sample() const { return 0; }
};

using ModelFactory = std::function<std::shared_ptr<Model>(const Config&, const ModelInput&)>;

// Returns true (for use in a static initializer). Throws on a duplicate name.
bool register_model(const std::string& name, ModelFactory factory);
// Throws ConfigError for an unknown model, or a config the data does not fit.
std::shared_ptr<Model> build_model(const Config& config, const ModelInput& input);
std::vector<std::string> model_names();
std::int64_t parameter_count(const torch::nn::Module& module);

}  // namespace cohort::train

// COHORT_REGISTER_MODEL(name, factory...): at namespace scope in the model's own file.
#define COHORT_REGISTER_MODEL(name, ...)             \
  static const bool cohort_model_registered_##name = \
      ::cohort::train::register_model(#name, __VA_ARGS__)
