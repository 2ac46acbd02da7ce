// model.materialize = own: a model built without its memory, and each rank then giving storage
// and initial values to the modules it keeps, so that no host ever holds the whole model.
//
// SkeletonScope: while it lives, the CPU allocations of the thread that made it of
// kSkeletonBytes or more are private anonymous mappings reserved but not backed, and each new one
// first releases the pages the previous ones were written (a module's constructor initialises
// its tensors at once). Constructing a model then costs about its largest tensor; its big tensors
// read as zeros afterwards. A read of a released page costs no memory only where the kernel maps
// its shared zero page: where it backs the read with a page of its own (measured: Linux 6.18
// here), a pass over the skeleton (the output check, the pipeline's shapes) would hold the whole
// model, so such a pass goes block by block and calls release_skeleton_pages() between blocks.
// Smaller allocations (the index tensors a constructor computes, small parameters) and other
// threads' are ordinary.
//
// Materializer: gives a leaf module (Linear, Conv, Embedding, LayerNorm, BatchNorm, the tensor-
// parallel linears) fresh storage for its parameters and buffers, initialised as LibTorch's
// constructor would (kaiming-uniform weights and biases, N(0, 1) embeddings, ones and zeros) but
// drawn from a generator of its own, seeded by the seed and the module's name in the model: the
// values do not depend on which modules a rank builds, or in which order. The model may then
// change a tensor's values (Model::adjust_initial_value: GPT's N(0, 0.02)). A tensor-parallel
// part is cut from its whole value, drawn whole (one module's whole tensor at a time). A leaf
// module of another type is a ConfigError naming it.
#pragma once

#include <torch/nn/module.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>

namespace cohort::models {

constexpr std::size_t kSkeletonBytes = 1u << 20;

class SkeletonScope {
 public:
  SkeletonScope();
  ~SkeletonScope();
  SkeletonScope(const SkeletonScope&) = delete;
  SkeletonScope& operator=(const SkeletonScope&) = delete;

  class Allocator;

 private:
  std::unique_ptr<Allocator> allocator_;
};

// Gives back the pages of every skeleton mapping alive, written or only read. Only before any
// module is materialised (the output check, the pipeline's shapes), when none holds a value:
// afterwards ZeRO 3 may have written a unit's values into its skeleton's storage. Any thread;
// nothing to do outside model.materialize = own.
void release_skeleton_pages();

// (module's name in the model, tensor's name in the module, its whole value, generator)
using AdjustInitial =
    std::function<void(const std::string&, const std::string&, at::Tensor&, at::Generator&)>;

class Materializer {
 public:
  Materializer(std::uint64_t seed, AdjustInitial adjust);
  // Every leaf module under `root` not materialised yet; `prefix` is root's name in the model
  // ("" for the model, or a stage that registers modules under the model's names). `in_place`:
  // the values are copied into the tensors' present storage (ZeRO 3 placed them in a unit's flat
  // buffer already), drawn in mappings of their own that are unmapped after, rather than given
  // as new storage.
  void materialize(torch::nn::Module& root, const std::string& prefix = "", bool in_place = false);
  bool done(const torch::nn::Module& module) const { return done_.count(&module) != 0; }

 private:
  void leaf(const std::string& name, torch::nn::Module& module, bool in_place);

  std::uint64_t seed_;
  AdjustInitial adjust_;
  std::set<const torch::nn::Module*> done_;
};

}  // namespace cohort::models

// The trainer's namespace sees the models' names as before (cohort::train::Model, ...): the train
// module, and plugins and programs written against cohort/train/model.hpp, use them unchanged.
namespace cohort::train {
using namespace ::cohort::models;  // NOLINT(google-build-using-namespace)
}  // namespace cohort::train
