// Stage: the contiguous run of a model's blocks that one pipeline rank owns.
//
// A model that qualifies for pipelining declares itself as a sequence of blocks (BlockSpec): each
// names the submodules it uses, by the model's own names, and maps one tensor to the next. A Stage
// registers those submodules under the same names, so a stage's parameter names are the whole
// model's (checkpoints written by any split name tensors alike). A submodule used by blocks of
// two stages (GPT's token embedding, which its output head reuses) is held by both: each copy
// gets its own gradient, which the trainer sums over the stages sharing it
// (shared_parameters()), so the copies stay equal. place() spreads the stage's blocks over
// several local devices (intra-process model parallelism); forward() then moves each block's
// input to the block's device.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cohort::pipeline {

struct BlockSpec {
  std::string name;  // for messages: "block3", "embed", "head"
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> modules;
  std::function<at::Tensor(const at::Tensor&)> forward;
  std::int64_t parameters() const;  // of its modules (a shared module counts in each user)
};

// Calls around each block of a Stage (ZeRO 3 gathers a block's parameters in them): before and
// after its forward (`again`: the forward a recomputed segment reruns during backward), and
// before its backward, from a hook on the gradient of the block's output.
struct BlockHooks {
  std::function<void(std::size_t block, bool again)> before_forward;
  std::function<void(std::size_t block, bool again)> after_forward;
  std::function<void(std::size_t block)> before_backward;
};

class Stage : public torch::nn::Module {
 public:
  // `bounds` is a partition of `blocks` (partition.hpp); this is stage `index` of it.
  Stage(const std::vector<BlockSpec>& blocks, const std::vector<int>& bounds, int index);

  at::Tensor forward(const at::Tensor& x);

  int index() const { return index_; }
  int stages() const { return stages_; }
  bool first() const { return index_ == 0; }
  bool last() const { return index_ + 1 == stages_; }
  const std::vector<std::string>& block_names() const { return names_; }
  // Parameters (by name) that other stages hold copies of, and which stages hold them.
  const std::vector<std::string>& shared_parameters() const { return shared_; }
  const std::vector<int>& sharing_stages() const { return sharing_stages_; }

  // Intra-process placement: the stage's blocks are split over `devices` by parameter count and
  // their modules moved there. ConfigError for more devices than blocks.
  void place(const std::vector<c10::Device>& devices);
  // Activation recompute (recompute.hpp) in segments of `every` consecutive blocks: forward()
  // keeps only each segment's input while gradients are on; a segment's recomputation leaves its
  // modules' buffers (BatchNorm statistics) as the forward left them. 0: off. After place().
  void set_recompute(int every);
  // Under recompute: the parameters used by more than one segment (GPT's tied embedding, in the
  // first and the last), by name, with the number of segments using them: the parts in which
  // their gradient arrives in one backward.
  std::map<std::string, int> gradient_arrivals() const;
  // Block b's modules, by their names in the model.
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> block_modules(
      std::size_t b) const;
  // Each parameter's block (index in this stage), by name; one used by several blocks has none.
  std::map<std::string, int> parameter_blocks() const;
  void set_block_hooks(BlockHooks hooks) { hooks_ = std::move(hooks); }

 private:
  int index_, stages_;
  std::vector<std::string> names_;
  std::vector<std::function<at::Tensor(const at::Tensor&)>> forwards_;
  std::vector<c10::Device> devices_;  // per block; empty: where the modules are
  std::vector<std::vector<std::shared_ptr<torch::nn::Module>>> modules_;  // per block
  std::vector<std::vector<std::string>> module_names_;                    // per block
  std::vector<std::int64_t> weights_;
  std::vector<std::function<at::Tensor(const at::Tensor&, bool)>> segments_;  // recompute
  std::vector<std::pair<std::size_t, std::size_t>> segment_blocks_;  // [first, last) per segment
  std::vector<std::string> shared_;
  std::vector<int> sharing_stages_;
  BlockHooks hooks_;

  at::Tensor run_block(std::size_t b, at::Tensor x, bool again);
  std::vector<c10::Device> segment_devices(std::size_t i) const;
};

// The per-sample shape (without the batch dimension) of every block's output, from one pass of
// `sample` ([1, ...]) through all blocks in eval mode, without gradients. The module is left in
// training mode. Every rank builds the whole model, so every stage knows its neighbours' shapes
// without exchanging them. `after_block` runs after each block (model.materialize = own gives
// back the pages the block's skeleton was read into).
std::vector<std::vector<std::int64_t>> block_output_shapes(
    const std::vector<BlockSpec>& blocks, torch::nn::Module& model, const at::Tensor& sample,
    const std::function<void()>& after_block = {});

// "cuda:0,cuda:1" -> devices; "" -> none. ConfigError naming parallel.devices for a bad entry or,
// on a machine without CUDA, for any CUDA device (checked before anything is placed).
std::vector<c10::Device> parse_devices(const std::string& text);

}  // namespace cohort::pipeline
