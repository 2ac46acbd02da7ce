#include "cohort/pipeline/stage.hpp"

#include <ATen/Context.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "cohort/error.hpp"
#include "cohort/pipeline/partition.hpp"

namespace cohort::pipeline {

std::int64_t BlockSpec::parameters() const {
  std::int64_t n = 0;
  for (const auto& [name, module] : modules) {
    for (const auto& p : module->parameters()) n += p.numel();
  }
  return n;
}

Stage::Stage(const std::vector<BlockSpec>& blocks, const std::vector<int>& bounds, int index)
    : index_(index), stages_(static_cast<int>(bounds.size()) - 1) {
  COHORT_CHECK(index >= 0 && index < stages_, ConfigError, "pipeline stage ", index, " outside 0..",
               stages_ - 1);
  // Which stages use each module, to find the ones held by more than one.
  std::map<std::string, std::set<int>> users;
  for (int s = 0; s < stages_; ++s) {
    for (int b = bounds[s]; b < bounds[s + 1]; ++b) {
      for (const auto& entry : blocks[b].modules) users[entry.first].insert(s);
    }
  }
  std::set<std::string> registered;
  std::set<int> sharing;
  for (int b = bounds[index]; b < bounds[index + 1]; ++b) {
    const auto& block = blocks[b];
    names_.push_back(block.name);
    forwards_.push_back(block.forward);
    weights_.push_back(block.parameters());
    modules_.emplace_back();
    for (const auto& [name, module] : block.modules) {
      modules_.back().push_back(module);
      if (!registered.insert(name).second) continue;
      register_module(name, module);
      const auto& by = users[name];
      if (by.size() < 2) continue;
      sharing.insert(by.begin(), by.end());
      for (const auto& p : module->named_parameters()) shared_.push_back(name + "." + p.key());
    }
  }
  sharing_stages_.assign(sharing.begin(), sharing.end());
}

at::Tensor Stage::forward(const at::Tensor& x) {
  at::Tensor y = x;
  for (std::size_t b = 0; b < forwards_.size(); ++b) {
    if (!devices_.empty() && y.device() != devices_[b]) y = y.to(devices_[b]);
    y = forwards_[b](y);
  }
  return y;
}

void Stage::place(const std::vector<c10::Device>& devices) {
  if (devices.empty()) return;
  const int n = static_cast<int>(devices.size());
  COHORT_CHECK(n <= static_cast<int>(forwards_.size()), ConfigError, "parallel.devices lists ", n,
               " devices for ", forwards_.size(), " blocks on this stage");
  const auto bounds = partition_balanced(weights_, n);
  devices_.clear();
  std::set<const torch::nn::Module*> moved;
  for (int d = 0; d < n; ++d) {
    for (int b = bounds[d]; b < bounds[d + 1]; ++b) {
      devices_.push_back(devices[d]);
      for (const auto& module : modules_[b]) {
        if (moved.insert(module.get()).second) module->to(devices[d]);
      }
    }
  }
}

std::vector<std::vector<std::int64_t>> block_output_shapes(const std::vector<BlockSpec>& blocks,
                                                           torch::nn::Module& model,
                                                           const at::Tensor& sample) {
  const bool training = model.is_training();
  model.eval();  // BatchNorm: no statistics updated by this pass
  std::vector<std::vector<std::int64_t>> shapes;
  {
    at::NoGradGuard no_grad;
    at::Tensor x = sample;
    for (const auto& block : blocks) {
      x = block.forward(x);
      shapes.emplace_back(x.sizes().begin() + 1, x.sizes().end());
    }
  }
  model.train(training);
  return shapes;
}

std::vector<c10::Device> parse_devices(const std::string& text) {
  std::vector<c10::Device> devices;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    std::optional<c10::Device> device;
    try {
      device = c10::Device(item);
    } catch (const c10::Error&) {
      COHORT_THROW(ConfigError, "parallel.devices: '", item,
                   "' is not a device (cpu, cuda:0, ...)");
    }
    COHORT_CHECK(!device->is_cuda() || at::hasCUDA(), ConfigError, "parallel.devices: ", item,
                 " asked for, but this machine has no CUDA device; intra-process layer placement "
                 "needs GPUs (leave parallel.devices empty)");
    devices.push_back(*device);
  }
  return devices;
}

}  // namespace cohort::pipeline
