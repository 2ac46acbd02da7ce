#include "cohort/pipeline/stage.hpp"

#include <ATen/Context.h>
#include <ATen/ops/empty.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "cohort/error.hpp"
#include "cohort/pipeline/partition.hpp"
#include "cohort/pipeline/recompute.hpp"

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
    module_names_.emplace_back();
    for (const auto& [name, module] : block.modules) {
      modules_.back().push_back(module);
      module_names_.back().push_back(name);
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
  if (!segments_.empty() && at::GradMode::is_enabled()) {
    for (std::size_t i = 0; i < segments_.size(); ++i) {
      y = recompute(segments_[i], y, segment_devices(i));
    }
    return y;
  }
  for (std::size_t b = 0; b < forwards_.size(); ++b) y = run_block(b, y, false);
  return y;
}

// Where segment i computes: its blocks' devices (placed by place()) and its parameters'.
std::vector<c10::Device> Stage::segment_devices(std::size_t i) const {
  std::vector<c10::Device> out;
  const auto [first, last] = segment_blocks_[i];
  for (std::size_t b = first; b < last; ++b) {
    if (!devices_.empty()) out.push_back(devices_[b]);
    for (const auto& module : modules_[b]) {
      for (const auto& p : module->parameters()) {
        if (std::find(out.begin(), out.end(), p.device()) == out.end()) out.push_back(p.device());
      }
    }
  }
  return out;
}

at::Tensor Stage::run_block(std::size_t b, at::Tensor x, bool again) {
  if (!devices_.empty() && x.device() != devices_[b]) x = x.to(devices_[b]);
  if (hooks_.before_forward) hooks_.before_forward(b, again);
  at::Tensor y = forwards_[b](x);
  if (hooks_.after_forward) hooks_.after_forward(b, again);
  if (hooks_.before_backward && y.requires_grad()) {
    y.register_hook([hook = hooks_.before_backward, b](const at::Tensor&) { hook(b); });
  }
  return y;
}

std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> Stage::block_modules(
    std::size_t b) const {
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> out;
  for (std::size_t m = 0; m < modules_[b].size(); ++m) {
    out.emplace_back(module_names_[b][m], modules_[b][m]);
  }
  return out;
}

std::map<std::string, int> Stage::parameter_blocks() const {
  std::map<std::string, int> block_of;
  std::set<std::string> several;
  for (std::size_t b = 0; b < modules_.size(); ++b) {
    for (std::size_t m = 0; m < modules_[b].size(); ++m) {
      for (const auto& p : modules_[b][m]->named_parameters()) {
        const std::string name = module_names_[b][m] + "." + p.key();
        const auto [it, fresh] = block_of.emplace(name, static_cast<int>(b));
        if (!fresh && it->second != static_cast<int>(b)) several.insert(name);
      }
    }
  }
  for (const auto& name : several) block_of.erase(name);
  return block_of;
}

void Stage::set_recompute(int every) {
  segments_.clear();
  segment_blocks_.clear();
  if (every <= 0) return;
  for (std::size_t first = 0; first < forwards_.size(); first += static_cast<std::size_t>(every)) {
    const std::size_t last = std::min(forwards_.size(), first + static_cast<std::size_t>(every));
    segment_blocks_.emplace_back(first, last);
    segments_.push_back([this, first, last](const at::Tensor& x, bool again) {
      // The recomputation must not move BatchNorm statistics a second time.
      std::vector<std::pair<at::Tensor, at::Tensor>> kept;
      if (again) {
        for (std::size_t b = first; b < last; ++b) {
          for (const auto& module : modules_[b]) {
            for (auto& buffer : module->buffers()) kept.emplace_back(buffer, buffer.clone());
          }
        }
      }
      at::Tensor y = x;
      for (std::size_t b = first; b < last; ++b) y = run_block(b, y, again);
      // Written through an alias of the storage: the buffer's own version counter must not move,
      // as the recomputed graph saved it (BatchNorm's backward takes its running statistics).
      for (auto& [buffer, value] : kept) {
        at::Tensor alias = at::empty({0}, buffer.options());
        alias.set_(buffer.storage(), buffer.storage_offset(), buffer.sizes(), buffer.strides());
        alias.copy_(value);
      }
      return y;
    });
  }
}

std::map<std::string, int> Stage::gradient_arrivals() const {
  std::map<std::string, int> segments_using;  // module name -> segments
  std::map<std::string, const torch::nn::Module*> by_name;
  for (const auto& [first, last] : segment_blocks_) {
    std::set<std::string> used;
    for (std::size_t b = first; b < last; ++b) {
      for (std::size_t m = 0; m < modules_[b].size(); ++m) {
        used.insert(module_names_[b][m]);
        by_name[module_names_[b][m]] = modules_[b][m].get();
      }
    }
    for (const auto& name : used) ++segments_using[name];
  }
  std::map<std::string, int> arrivals;
  for (const auto& [name, count] : segments_using) {
    if (count < 2) continue;
    for (const auto& p : by_name[name]->named_parameters()) arrivals[name + "." + p.key()] = count;
  }
  return arrivals;
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

std::vector<std::vector<std::int64_t>> block_output_shapes(
    const std::vector<BlockSpec>& blocks, torch::nn::Module& model, const at::Tensor& sample,
    const std::function<void()>& after_block) {
  const bool training = model.is_training();
  model.eval();  // BatchNorm: no statistics updated by this pass
  std::vector<std::vector<std::int64_t>> shapes;
  {
    at::NoGradGuard no_grad;
    at::Tensor x = sample;
    for (const auto& block : blocks) {
      x = block.forward(x);
      shapes.emplace_back(x.sizes().begin() + 1, x.sizes().end());
      if (after_block) after_block();
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
