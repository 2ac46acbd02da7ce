// Models, built from config through one registry: a new model is one file in src/models/builtin/
// that calls COHORT_REGISTER_MODEL, or a file of the user's, in a shared library that
// model.library loads or in their own program that links cohort::cohort (docs/models.md, "C++
// models"); such a model may declare the keys of its own config section (model_options.hpp). A
// model is a torch::nn::Module whose forward() maps a batch of inputs to outputs: [B, classes]
// logits for classification, [B, L, vocab] for token models, [B, values] for regression and
// multilabel (train.task; [B, 1] or [B] for a scalar target). A model that declares itself as a
// sequence of blocks (blocks(); its forward() runs them in order) can be split into pipeline
// stages; one built with a tensor group splits its tensor-parallel layers over it (the GPT).
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/version.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cohort/config.hpp"
#include "cohort/data/dataset.hpp"
#include "cohort/data/reader.hpp"
#include "cohort/pipeline/stage.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/settings/model_options.hpp"

namespace cohort::comm {
class Communicator;
}

namespace cohort::models {

// The settings a model is built from, by the names the model API has always used.
using settings::ModelConfig;
using settings::ModelOptions;
using settings::ModelOptionsTable;

// What the dataset says about a model's inputs and outputs.
struct ModelInput {
  std::vector<std::int64_t> sample_shape;  // one input sample
  // Per sample: the classes (classification), the target's values (regression, multilabel).
  std::int64_t outputs = 0;
  std::int64_t vocab_size = 0;  // token models
  std::int64_t seq_len = 0;
  // Tensor parallelism: the group the model's tensor-parallel layers are split over (nullptr:
  // none). A model without such layers rejects a group of more than one rank.
  comm::Communicator* tensor_group = nullptr;
  // Field datasets: the input fields, by name (empty otherwise).
  std::vector<data::FieldInfo> fields{};
  // model.materialize = own: the model is built as a skeleton (models/materialize.hpp) whose
  // values each rank draws later for its own part; a constructor skips its own initialisation
  // passes (adjust_initial_value() does them per tensor instead).
  bool skeleton = false;
};

class Model : public torch::nn::Module {
 public:
  virtual at::Tensor forward(const at::Tensor& inputs) = 0;
  // Field datasets: every input field by name, a ragged one padded and followed by its mask
  // "<name>_mask". The default gives the first field to forward().
  virtual at::Tensor forward_fields(const std::vector<data::NamedTensor>& fields) {
    return forward(fields.front().tensor);
  }
  // Forward + backward FLOPs of one training sample, for the monitor's FLOP/s and MFU; 0 when
  // the model does not say.
  virtual double train_flops_per_sample() const { return 0; }
  // The model as a sequence of blocks sharing this model's submodules; forward() is their
  // composition. Empty: the model cannot be pipelined.
  virtual std::vector<pipeline::BlockSpec> blocks() { return {}; }
  // model.materialize = own: the model's own initialisation of one tensor (`tensor` of module
  // `module`, by their names), applied to the whole value the module's default drew, with that
  // module's generator. The default keeps LibTorch's initialisation.
  virtual void adjust_initial_value(const std::string& /*module*/, const std::string& /*tensor*/,
                                    at::Tensor& /*value*/, at::Generator& /*generator*/) const {}
};

// Runs `blocks` in order: the forward() of a model made of them.
at::Tensor run_blocks(const std::vector<pipeline::BlockSpec>& blocks, const at::Tensor& inputs);
// One all-zero input sample ([1, ...], int64 tokens or float features), for shape inference.
at::Tensor sample_input(const ModelInput& input);

// A factory reads its settings from the [model] section and, for a model that declared them, its
// own section (ModelConfig::options), all typed at load.
using ModelFactory = std::function<std::shared_ptr<Model>(const ModelConfig&, const ModelInput&)>;

}  // namespace cohort::models

// What a model's code must agree on with the Cohort that runs it: Cohort's version, LibTorch's,
// and libstdc++'s string ABI. The registration passes the tag its own code was compiled with (a
// default argument: evaluated in the model's library), and a library whose tag differs is
// refused before anything of it is used.
#define COHORT_MODEL_ABI_STR2(x) #x
#define COHORT_MODEL_ABI_STR(x) COHORT_MODEL_ABI_STR2(x)
#define COHORT_MODEL_ABI \
  "cohort " COHORT_VERSION ", torch " COHORT_MODEL_ABI_STR(                             \
      TORCH_VERSION_MAJOR) "." COHORT_MODEL_ABI_STR(TORCH_VERSION_MINOR) ", libstdc++ " \
      "cxx11 ABI " COHORT_MODEL_ABI_STR(_GLIBCXX_USE_CXX11_ABI)

namespace cohort::models {

// Returns whether the model was registered (for use in a static initializer). Throws on a
// duplicate name, except while a model library loads: then a duplicate, a section that is not
// the model's, or another ABI is recorded, and the loader refuses the library in one line.
bool register_model(const std::string& name, ModelFactory factory,
                    const char* abi = COHORT_MODEL_ABI);
bool register_model(const std::string& name, const ModelOptionsTable& options, ModelFactory factory,
                    const char* abi = COHORT_MODEL_ABI);
// A model with its own section: factory(config, options, input) gets the options typed.
template <typename Options, typename Factory>
bool register_model(const std::string& name, const ModelOptions<Options>& options, Factory factory,
                    const char* abi = COHORT_MODEL_ABI) {
  return register_model(
      name, options.table(),
      [factory](const ModelConfig& config, const ModelInput& input) -> std::shared_ptr<Model> {
        return factory(config, *static_cast<const Options*>(config.options.get()), input);
      },
      abi);
}
// Throws ConfigError for an unknown model, or a config the data does not fit.
std::shared_ptr<Model> build_model(const ModelConfig& config, const ModelInput& input);
std::vector<std::string> model_names();
std::int64_t parameter_count(const torch::nn::Module& module);

}  // namespace cohort::models

// COHORT_REGISTER_MODEL(name, factory) or (name, ModelOptions<O>, factory): at namespace scope in
// the model's own file.
#define COHORT_REGISTER_MODEL(name, ...)             \
  static const bool cohort_model_registered_##name = \
      ::cohort::models::register_model(#name, __VA_ARGS__)

// The trainer's namespace sees the models' names as before (cohort::train::Model, ...): the train
// module, and plugins and programs written against cohort/train/model.hpp, use them unchanged.
namespace cohort::train {
using namespace ::cohort::models;  // NOLINT(google-build-using-namespace)
}  // namespace cohort::train
