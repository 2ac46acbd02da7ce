// Pretrained weights and frozen parameters (model.init_from, init_strict, init_prefix_map,
// init_skip, freeze), applied to the whole model on every rank before it is split or wrapped in
// DDP.
//
// init_weights(): the weights' names (ckpt::read_weights) renamed by the prefix map, matched to
// the model's parameters and buffers by name and shape and copied in (converted to the model's
// dtype). Model tensors that model.init_skip matches are left as initialised and the file's
// tensors of those names dropped (a new head), before the checks. Strict: every other model tensor
// must be there with its shape and nothing else, else one ConfigError listing the first of each
// kind. Not strict: what matches is loaded and the report says what was missing (kept as
// initialised), unexpected (ignored) and of another shape (both shapes); nothing matching at all is
// still an error. The trainer does not call it for a run that resumes (its checkpoint holds the
// weights).
#pragma once

#include <torch/nn/module.h>

#include <string>
#include <utility>
#include <vector>

#include "cohort/settings/config.hpp"

namespace cohort::models {

using settings::ModelConfig;

struct InitReport {
  std::string source;  // the file or step directory read
  int loaded = 0;
  std::vector<std::string> missing, unexpected, mismatched;  // mismatched: "name [a] vs [b]"
  std::vector<std::string> skipped;  // model.init_skip: left as initialised, not missing
  std::string text() const;          // one line, for the console
};

InitReport init_weights(torch::nn::Module& model, const ModelConfig& config);

// Sets requires_grad = false on the parameters whose names the regex matches (found anywhere in
// the name; ^ anchors); returns how many. ConfigError when it matches none.
int freeze_parameters(torch::nn::Module& model, const std::string& regex);

// The modules that hold running statistics (a buffer named running_*, as BatchNorm's
// running_mean and running_var) and whose own parameters are all frozen: model.freeze_statistics
// keeps them in eval mode while the model trains (Parallelism::hold_in_eval), so that frozen
// means their statistics too. A module without parameters of its own (BatchNorm with affine =
// false) is not frozen by a name.
std::vector<std::shared_ptr<torch::nn::Module>> frozen_statistics_modules(
    const torch::nn::Module& model);

}  // namespace cohort::models

// The trainer's namespace sees the models' names as before (cohort::train::Model, ...): the train
// module, and plugins and programs written against cohort/train/model.hpp, use them unchanged.
namespace cohort::train {
using namespace ::cohort::models;  // NOLINT(google-build-using-namespace)
}  // namespace cohort::train
