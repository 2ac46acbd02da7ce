// torchscript: a module written in Python and saved with torch.jit.script(m).save(path) or
// torch.jit.trace(m, example).save(path), named by model.file, trained as the built-in models
// are. The module's parameters and buffers are registered with this Model under the module's own
// names (a torch::nn::Module per submodule, mirroring its tree), holding the same tensors: the
// optimizer, DDP, checkpoints (named as Python's state_dict names them), moves to a device and
// broadcasts all act on the tensors the scripted forward() reads. train()/eval() reach the
// scripted module too (its `training` flags: dropout, BatchNorm).
//
// forward() takes one tensor (a single-input dataset) or a Dict[str, Tensor] (a field dataset:
// every input field by name, ragged ones with their "<name>_mask") and returns the logits.
// A module whose top level is an nn.Sequential is a sequence of blocks, one per child, so that
// pipeline stages can split it; any other runs whole. Tensor parallelism is refused.
#include <ATen/ops/zeros.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <memory>
#include <string>
#include <vector>

#include "cohort/comm/communicator.hpp"
#include "cohort/error.hpp"
#include "cohort/models/model.hpp"
#include "cohort/settings/config.hpp"
#include "common/torchscript_load.hpp"

namespace cohort::models {

// The run's settings by their own names.
using namespace ::cohort::settings;  // NOLINT(google-build-using-namespace)

namespace {

constexpr const char* kKey = "model.file";

// Registers `from`'s own parameters and buffers with `to` (the same tensors), then a mirror of
// each child under the child's name.
// A scripted submodule's stand-in in the LibTorch module tree: its tensors, and its mode. A stage
// of a pipeline (or a run placed on devices) switches train and eval mode through these, not
// through the model, so each one switches the scripted module it stands for (BatchNorm,
// dropout); model.freeze's held modules too.
class ScriptedPart : public torch::nn::Module {
 public:
  ScriptedPart(const std::string& name, torch::jit::Module scripted)
      : torch::nn::Module(name), scripted_(std::move(scripted)) {}
  void train(bool on) override {
    torch::nn::Module::train(on);  // the parts below first; then this one's scripted subtree
    scripted_.train(on);
  }

 private:
  torch::jit::Module scripted_;
};

void mirror(const torch::jit::Module& from, torch::nn::Module& to) {
  for (const auto& p : from.named_parameters(/*recurse=*/false)) {
    to.register_parameter(p.name, p.value, p.value.requires_grad());
  }
  for (const auto& b : from.named_buffers(/*recurse=*/false)) to.register_buffer(b.name, b.value);
  for (const auto& child : from.named_children()) {
    auto sub = std::make_shared<ScriptedPart>(child.name, child.value);
    mirror(child.value, *sub);
    to.register_module(child.name, sub);
  }
}

// What forward() takes besides self: a Tensor, or Dict[str, Tensor] (field datasets).
enum class Takes { kTensor, kDict };

Takes forward_argument(const torch::jit::Module& module, const std::string& path) {
  const auto& schema = module.get_method("forward").function().getSchema();
  const auto& args = schema.arguments();
  COHORT_CHECK(args.size() == 2, ConfigError, path, ": ", kKey, ": forward() takes ",
               args.size() - 1, " arguments; Cohort passes one (a Tensor, or Dict[str, Tensor])");
  const auto& type = args[1].type();
  if (type->kind() == c10::TypeKind::TensorType) return Takes::kTensor;
  if (const auto dict = type->cast<c10::DictType>()) {
    if (dict->getKeyType()->kind() == c10::TypeKind::StringType &&
        dict->getValueType()->kind() == c10::TypeKind::TensorType) {
      return Takes::kDict;
    }
  }
  COHORT_THROW(ConfigError, path, ": ", kKey, ": forward() takes ", type->str(),
               "; Cohort passes a Tensor, or Dict[str, Tensor]");
}

// forward() of the scripted module: LibTorch's and the interpreter's errors (a shape that does
// not fit, a `raise` in the script) as one line naming the file.
c10::IValue call(torch::jit::Module& module, std::vector<c10::IValue> args, const std::string& path,
                 bool optimize) {
  try {
    // Unoptimized, the interpreter runs the graph's operators as written, and autograd records
    // them as in eager PyTorch; the optimizing executor first profiles a few calls, then
    // specializes the graph to the shapes it saw (re-profiling when they change, as ragged
    // batches' do) and differentiates it itself. docs/models.md has the measured difference.
    torch::jit::GraphOptimizerEnabledGuard executor(optimize);
    return module.forward(std::move(args));
  } catch (const c10::Error& e) {
    COHORT_THROW(ConfigError, path, ": ", kKey,
                 ": forward() failed: ", torchscript::first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    COHORT_THROW(ConfigError, path, ": ", kKey,
                 ": forward() failed: ", torchscript::last_line(e.what()));
  }
}

at::Tensor as_logits(const c10::IValue& out, const std::string& path) {
  COHORT_CHECK(out.isTensor(), ConfigError, path, ": ", kKey, ": forward() returned ",
               out.tagKind(), "; Cohort needs a Tensor of logits");
  return out.toTensor();
}

class TorchScriptModel : public Model {
 public:
  TorchScriptModel(const ModelConfig& config, const ModelInput& input)
      : path_(config.file), flops_(config.flops_per_sample), optimize_(config.jit_optimize) {
    COHORT_CHECK(!path_.empty(), ConfigError, "model.name = torchscript needs model.file");
    COHORT_CHECK(input.tensor_group == nullptr || input.tensor_group->size() == 1, ConfigError,
                 path_, ": a TorchScript model cannot be split by parallel.tensor");
    module_ = torchscript::load<ConfigError>(path_, kKey);
    const Takes takes = forward_argument(module_, path_);
    const bool fields = !input.fields.empty();
    COHORT_CHECK(fields == (takes == Takes::kDict), ConfigError, path_, ": ", kKey,
                 fields ? ": the dataset has named fields; forward() must take Dict[str, Tensor]"
                        : ": the dataset has one input; forward() must take a Tensor");
    mirror(module_, *this);
    if (module_.type()->name() &&
        module_.type()->name()->qualifiedName().find("torch.nn.modules.container.Sequential") !=
            std::string::npos) {
      for (const auto& child : module_.named_children()) {
        torch::jit::Module block = child.value;
        blocks_.push_back({child.name,
                           {{child.name, named_children()[child.name]}},
                           [block, path = path_, opt = optimize_](const at::Tensor& x) mutable {
                             return as_logits(call(block, {x}, path, opt), path);
                           }});
      }
    }
  }

  at::Tensor forward(const at::Tensor& inputs) override {
    return as_logits(call(module_, {inputs}, path_, optimize_), path_);
  }

  at::Tensor forward_fields(const std::vector<data::NamedTensor>& fields) override {
    c10::Dict<std::string, at::Tensor> named;
    for (const auto& [name, tensor] : fields) named.insert(name, tensor);
    return as_logits(call(module_, {named}, path_, optimize_), path_);
  }

  void train(bool on) override {
    torch::nn::Module::train(on);
    module_.train(on);
  }

  double train_flops_per_sample() const override { return flops_; }
  std::vector<pipeline::BlockSpec> blocks() override { return blocks_; }

 private:
  std::string path_;
  double flops_ = 0;
  bool optimize_ = false;  // model.jit_optimize
  torch::jit::Module module_;
  std::vector<pipeline::BlockSpec> blocks_;  // the children of a top-level nn.Sequential
};

}  // namespace

COHORT_REGISTER_MODEL(torchscript, [](const ModelConfig& config, const ModelInput& input) {
  return std::make_shared<TorchScriptModel>(config, input);
});

}  // namespace cohort::models
