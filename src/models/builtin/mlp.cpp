// mlp: flatten, then Linear + ReLU (+ dropout) for each width of model.hidden, then a Linear to
// the classes. Each Linear is one pipeline block.
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/dropout.h>
#include <torch/nn/modules/linear.h>

#include "cohort/error.hpp"
#include "cohort/models/model.hpp"
#include "cohort/settings/config.hpp"

namespace cohort::models {

// The run's settings by their own names.
using namespace ::cohort::settings;  // NOLINT(google-build-using-namespace)

namespace {

class Mlp : public Model {
 public:
  Mlp(const ModelConfig& config, const ModelInput& input) {
    COHORT_CHECK(input.outputs >= 1, ConfigError, "model mlp: the task has no outputs (",
                 input.outputs, "): the dataset records no classes");
    const double dropout = config.dropout;
    std::int64_t width = 1;
    for (auto d : input.sample_shape) width *= d;
    int index = 0;
    for (const auto hidden : config.hidden) {  // each >= 1: checked at load
      const std::string name = "fc" + std::to_string(index);
      torch::nn::Linear layer(width, hidden);
      register_module(name, layer);
      const bool first = index++ == 0;
      blocks_.push_back(
          {name, {{name, layer.ptr()}}, [layer, dropout, first](at::Tensor x) mutable {
             x = torch::nn::functional::relu(layer->forward(first ? x.flatten(1) : x));
             if (dropout <= 0) return x;
             return torch::nn::functional::dropout(
                 x, torch::nn::functional::DropoutFuncOptions().p(dropout).training(
                        layer->is_training()));
           }});
      width = hidden;
    }
    torch::nn::Linear out(width, input.outputs);
    register_module("out", out);
    const bool first = index == 0;
    blocks_.push_back({"out", {{"out", out.ptr()}}, [out, first](const at::Tensor& x) mutable {
                         return out->forward(first ? x.flatten(1) : x);
                       }});
  }

  at::Tensor forward(const at::Tensor& inputs) override { return run_blocks(blocks_, inputs); }
  std::vector<pipeline::BlockSpec> blocks() override { return blocks_; }

 private:
  std::vector<pipeline::BlockSpec> blocks_;  // fc0 ... fcN (Linear, ReLU, dropout), out
};

}  // namespace

COHORT_REGISTER_MODEL(mlp, [](const ModelConfig& config, const ModelInput& input) {
  return std::make_shared<Mlp>(config, input);
});

}  // namespace cohort::models
