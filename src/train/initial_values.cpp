#include "train/initial_values.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/core/Generator.h>
#include <ATen/core/grad_mode.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "cohort/comm/device.hpp"
#include "cohort/error.hpp"
#include "models/init_weights.hpp"
#include "train/trainer_impl.hpp"

namespace cohort::train {
namespace {

// Puts the CPU generator back where it was, also when building the model again throws.
class GeneratorRestore {
 public:
  GeneratorRestore() : state_(cpu_generator_state()) {}
  ~GeneratorRestore() {
    try {
      set_cpu_generator_state(state_);
    } catch (const std::exception& e) {  // a state it gave out itself: not expected to fail
      std::fprintf(stderr, "cohort: warning: random generator not restored: %s\n", e.what());
    }
  }
  GeneratorRestore(const GeneratorRestore&) = delete;
  GeneratorRestore& operator=(const GeneratorRestore&) = delete;

 private:
  at::Tensor state_;
};

}  // namespace

at::Tensor cpu_generator_state() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_cpu_generator_state(const at::Tensor& state) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

std::optional<at::Tensor> device_generator_state() {
  const std::optional<int> device = comm::rank_device();
  if (!device) return std::nullopt;
  at::Generator generator = at::globalContext().defaultGenerator(
      c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(*device)));
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_device_generator_state(const at::Tensor& state) {
  const std::optional<int> device = comm::rank_device();
  COHORT_CHECK(device.has_value(), Error, "a GPU random state given to a rank without a GPU");
  at::Generator generator = at::globalContext().defaultGenerator(
      c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(*device)));
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

void remake_values(const ModelConfig& config, const ModelInput& input, const at::Tensor& generator,
                   torch::nn::Module& model) {
  std::shared_ptr<Model> made;
  {
    const GeneratorRestore restore;
    set_cpu_generator_state(generator);
    made = build_model(config, input);
  }
  at::NoGradGuard no_grad;  // parameters are leaves that require grad
  const auto params = made->named_parameters(), buffers = made->named_buffers();
  const auto copy = [](const auto& from, const std::string& name, at::Tensor target) {
    const at::Tensor* value = from.find(name);
    COHORT_CHECK(value != nullptr && value->sizes() == target.sizes(), Error, "model tensor '",
                 name, "' is not made again as it was built (its initial values are lost)");
    target.copy_(*value);
  };
  for (const auto& p : model.named_parameters()) copy(params, p.key(), p.value());
  for (const auto& b : model.named_buffers()) copy(buffers, b.key(), b.value());
}

void Trainer::Impl::InitialValues::record(const ModelInput& built_from) {
  input = built_from;
  generator = cpu_generator_state();
}

// model.init_from was not read (or this is never called: InitialValues::generator undefined).
// Collective where building the model is (tensor-parallel layers) and as DDP's broadcast: every
// rank gets here together, as no candidate loaded on any.
void Trainer::Impl::remake_initial_values() {
  COHORT_CHECK(initial.generator.defined() && parallel->whole_model() != nullptr, Error,
               "the model's initial values cannot be made again");
  remake_values(config.model, initial.input, initial.generator, *parallel->whole_model());
  parallel->ddp().broadcast_state();  // as DDP's construction did: every rank has rank 0's
}

// model.init_from was not read because the run was to resume, and no checkpoint loaded: the
// pretrained weights now, over the initial values (made again, when a candidate was read into
// them), as a run without checkpoints has them. Collective (DDP's broadcast).
void Trainer::Impl::init_from_after_all() {
  Model* model = parallel->whole_model();
  COHORT_CHECK(model != nullptr, ConfigError, "model.init_from = ", config.model.init_from,
               " was not read because the run was to resume from ", config.checkpoint_dir(),
               ", where no checkpoint loaded; a model split across ranks cannot read it now: set "
               "checkpoint.resume = false to start from it");
  initial.init_line = init_weights(*model, config.model).text();
  parallel->ddp().broadcast_state();
  say(initial.init_line);
}

}  // namespace cohort::train
