// mlp: flatten, then Linear + ReLU (+ dropout) for each width of model.hidden, then a Linear to
// the classes.
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/dropout.h>
#include <torch/nn/modules/linear.h>

#include "cohort/error.hpp"
#include "cohort/train/config.hpp"
#include "cohort/train/model.hpp"

namespace cohort::train {
namespace {

class Mlp : public Model {
 public:
  Mlp(const Config& config, const ModelInput& input) : dropout_(config.get_float("model.dropout")) {
    COHORT_CHECK(input.classes >= 2, ConfigError, "model mlp: the dataset has no classes (",
                 input.classes, "); it needs a classification set");
    std::int64_t width = 1;
    for (auto d : input.sample_shape) width *= d;
    int index = 0;
    for (const auto hidden : config.get_int_list("model.hidden")) {
      COHORT_CHECK(hidden >= 1, ConfigError, "model.hidden: widths must be >= 1");
      layers_.push_back(
          register_module("fc" + std::to_string(index++), torch::nn::Linear(width, hidden)));
      width = hidden;
    }
    layers_.push_back(register_module("out", torch::nn::Linear(width, input.classes)));
  }

  at::Tensor forward(const at::Tensor& inputs) override {
    at::Tensor x = inputs.flatten(1);
    for (std::size_t i = 0; i + 1 < layers_.size(); ++i) {
      x = torch::nn::functional::relu(layers_[i]->forward(x));
      if (dropout_ > 0) {
        x = torch::nn::functional::dropout(
            x, torch::nn::functional::DropoutFuncOptions().p(dropout_).training(is_training()));
      }
    }
    return layers_.back()->forward(x);
  }

 private:
  double dropout_;
  std::vector<torch::nn::Linear> layers_;
};

}  // namespace

COHORT_REGISTER_MODEL(mlp, [](const Config& config, const ModelInput& input) {
  return std::make_shared<Mlp>(config, input);
});

}  // namespace cohort::train
