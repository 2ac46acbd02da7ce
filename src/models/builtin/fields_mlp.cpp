// fields_mlp: a classifier over a field dataset's named inputs. Each integer field with a
// vocab_size is embedded (model.width values per id); a ragged field is then averaged over its
// mask (a bag of embeddings: padding never counts); each float field is flattened (a ragged one
// averaged over its mask too). The pieces are concatenated in field order and go through
// Linear + ReLU (+ dropout) for each width of model.hidden, then a Linear to the outputs (the
// classes). It is what a text classifier on subword tokens, or an image-plus-features model, starts
// from.
#include <ATen/ops/cat.h>
#include <ATen/ops/ones.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include <map>

#include "cohort/error.hpp"
#include "cohort/models/model.hpp"
#include "cohort/settings/config.hpp"

namespace cohort::models {

// The run's settings by their own names.
using namespace ::cohort::settings;  // NOLINT(google-build-using-namespace)

namespace {

class FieldsMlp : public Model {
 public:
  FieldsMlp(const ModelConfig& config, const ModelInput& input)
      : fields_(input.fields), dropout_(config.dropout) {
    COHORT_CHECK(!fields_.empty(), ConfigError,
                 "model fields_mlp: the dataset has no named fields (it needs a field dataset, "
                 "docs/formats/dataset.md)");
    COHORT_CHECK(input.outputs >= 1, ConfigError, "model fields_mlp: the task has no outputs (",
                 input.outputs, "): the dataset records no classes");
    std::int64_t width = 0;
    for (const auto& field : fields_) {
      if (field.integer()) {
        COHORT_CHECK(field.vocab_size > 0, ConfigError, "model fields_mlp: integer field '",
                     field.name, "' has no vocab_size attribute to size its embedding");
        embeddings_.emplace(field.name,
                            register_module("embed_" + field.name,
                                            torch::nn::Embedding(field.vocab_size, config.width)));
        width += config.width * (field.ragged ? 1 : data::shape_numel(field.shape));
      } else {
        width += data::shape_numel(field.shape);
      }
    }
    int index = 0;
    for (const auto hidden : config.hidden) {
      layers_.push_back(
          register_module("fc" + std::to_string(index++), torch::nn::Linear(width, hidden)));
      width = hidden;
    }
    out_ = register_module("out", torch::nn::Linear(width, input.outputs));
  }

  // One tensor: the first field, every position real.
  at::Tensor forward(const at::Tensor& inputs) override {
    std::vector<data::NamedTensor> fields{{fields_.front().name, inputs}};
    if (fields_.front().ragged) {
      fields.push_back(
          {fields_.front().name + "_mask", at::ones({inputs.size(0), inputs.size(1)}, at::kBool)});
    }
    return forward_fields(fields);
  }

  at::Tensor forward_fields(const std::vector<data::NamedTensor>& fields) override {
    std::map<std::string, at::Tensor> by_name;
    for (const auto& f : fields) by_name[f.name] = f.tensor;
    std::vector<at::Tensor> pieces;
    for (const auto& field : fields_) {
      const auto it = by_name.find(field.name);
      COHORT_CHECK(it != by_name.end(), UsageError, "model fields_mlp: no input field '",
                   field.name, "'");
      at::Tensor x = it->second;
      if (field.integer()) x = embeddings_.at(field.name)->forward(x);
      if (field.ragged) {
        // Mean over the real positions: [B, L, ...] -> [B, ...].
        at::Tensor mask = by_name.at(field.name + "_mask").to(x.scalar_type());
        while (mask.dim() < x.dim()) mask = mask.unsqueeze(-1);
        x = (x * mask).sum(1) / mask.sum(1).clamp_min(1);
      }
      pieces.push_back(x.flatten(1));
    }
    at::Tensor x = at::cat(pieces, 1);
    for (auto& layer : layers_) {
      x = torch::nn::functional::relu(layer->forward(x));
      if (dropout_ > 0) {
        x = torch::nn::functional::dropout(
            x, torch::nn::functional::DropoutFuncOptions().p(dropout_).training(is_training()));
      }
    }
    return out_->forward(x);
  }

 private:
  std::vector<data::FieldInfo> fields_;
  double dropout_ = 0;
  std::map<std::string, torch::nn::Embedding> embeddings_;
  std::vector<torch::nn::Linear> layers_;
  torch::nn::Linear out_{nullptr};
};

}  // namespace

COHORT_REGISTER_MODEL(fields_mlp, [](const ModelConfig& config, const ModelInput& input) {
  return std::make_shared<FieldsMlp>(config, input);
});

}  // namespace cohort::models
