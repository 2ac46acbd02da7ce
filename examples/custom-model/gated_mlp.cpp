// gated_mlp: a model written outside Cohort, built against an installed Cohort into a shared
// library (CMakeLists.txt), loaded with model.library and trained by `cohort train` like a
// built-in one: DDP, checkpoints, resume, requeue, pipeline stages, monitoring.
//
// The input is projected to [gated_mlp] width, then passes `depth` residual gated blocks
//   x + scale * W2(act(W1 x) * sigmoid(Wg x)),
// then a linear head to the task's outputs. Its own settings live in the [gated_mlp] section of
// the config, declared below with type, default, help and range: `cohort config check`
// validates them and refuses a key the model does not declare.
#include <torch/nn/functional/activation.h>
#include <torch/nn/modules/linear.h>
#include <cohort/error.hpp>
#include <cohort/models/model.hpp>

#include <memory>
#include <string>
#include <vector>

namespace {

struct GatedMlpOptions {
  std::int64_t width = 128;
  std::int64_t depth = 2;
  std::string activation = "gelu";
  double scale = 1.0;
};

const auto kOptions =
    cohort::models::ModelOptions<GatedMlpOptions>()
        .key("width", &GatedMlpOptions::width, "128", "hidden width", 1, 65536)
        .key("depth", &GatedMlpOptions::depth, "2", "residual gated blocks", 0, 256)
        .choice("activation", &GatedMlpOptions::activation, "gelu|relu|silu", "gelu",
                "the blocks' activation")
        .key("scale", &GatedMlpOptions::scale, "1.0", "each block's residual scale", 0, 10);

at::Tensor activate(const std::string& name, const at::Tensor& x) {
  if (name == "relu") return torch::relu(x);
  if (name == "silu") return torch::silu(x);
  return torch::gelu(x);
}

// A model is a torch::nn::Module with forward(); blocks() makes it splittable into pipeline
// stages (each block names the submodules it uses, by the model's own names).
class GatedMlp : public cohort::models::Model {
 public:
  GatedMlp(const GatedMlpOptions& o, const cohort::models::ModelInput& input) {
    COHORT_CHECK(input.vocab_size == 0 && input.outputs >= 1, cohort::ConfigError,
                 "model gated_mlp: needs feature samples and a task with outputs");
    std::int64_t features = 1;
    for (const auto d : input.sample_shape) features *= d;
    torch::nn::Linear in(features, o.width);
    register_module("in", in);
    blocks_.push_back({"in", {{"in", in.ptr()}}, [in](const at::Tensor& x) mutable {
                         return in->forward(x.flatten(1));
                       }});
    for (std::int64_t i = 0; i < o.depth; ++i) {
      const std::string name = "block" + std::to_string(i);
      torch::nn::Linear up(o.width, 2 * o.width), gate(o.width, 2 * o.width);
      torch::nn::Linear down(2 * o.width, o.width);
      register_module(name + "_up", up);
      register_module(name + "_gate", gate);
      register_module(name + "_down", down);
      blocks_.push_back(
          {name,
           {{name + "_up", up.ptr()}, {name + "_gate", gate.ptr()}, {name + "_down", down.ptr()}},
           [up, gate, down, o](const at::Tensor& x) mutable {
             const auto h =
                 activate(o.activation, up->forward(x)) * torch::sigmoid(gate->forward(x));
             return x + o.scale * down->forward(h);
           }});
    }
    torch::nn::Linear head(o.width, input.outputs);
    register_module("head", head);
    blocks_.push_back({"head", {{"head", head.ptr()}}, [head](const at::Tensor& x) mutable {
                         return head->forward(torch::relu(x));
                       }});
    flops_ = 6.0 * static_cast<double>(cohort::models::parameter_count(*this));
  }

  at::Tensor forward(const at::Tensor& inputs) override {
    return cohort::models::run_blocks(blocks_, inputs);
  }
  std::vector<cohort::pipeline::BlockSpec> blocks() override { return blocks_; }
  // Forward and backward of one sample: about 6 FLOPs per weight (the monitor's MFU).
  double train_flops_per_sample() const override { return flops_; }

 private:
  std::vector<cohort::pipeline::BlockSpec> blocks_;
  double flops_ = 0;
};

}  // namespace

// model.name = gated_mlp; the factory gets the [gated_mlp] section typed.
COHORT_REGISTER_MODEL(gated_mlp, kOptions,
                      [](const cohort::models::ModelConfig&, const GatedMlpOptions& options,
                         const cohort::models::ModelInput& input) {
                        return std::make_shared<GatedMlp>(options, input);
                      });
