// Optimization pieces built from config: the optimizer (SGD with momentum/Nesterov/weight decay,
// or AdamW), the learning-rate schedule, and gradient clipping by global norm.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torch::optim {
class Optimizer;
}

#include "cohort/settings/config.hpp"

namespace cohort::train {

// The parameters an optimizer trains: those that require gradients (model.freeze leaves the
// others out), in groups of one learning-rate scale each (optim.lr_scale: "REGEX:FACTOR,...", the
// first regex found in a parameter's name gives its factor; 1 when none does).
struct ParameterGroups {
  std::vector<std::vector<at::Tensor>> params;
  std::vector<double> lr_scales;  // one per group
};
// every_regex_matches (the whole model's parameters): ConfigError when a regex of optim.lr_scale
// matches no trainable parameter (a pipeline stage's share may hold none of its matches).
ParameterGroups group_parameters(
    const std::vector<std::pair<std::string, at::Tensor>>& named_parameters,
    const std::string& lr_scale, bool every_regex_matches);

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimConfig& config,
                                                        const std::vector<at::Tensor>& params);
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimConfig& config,
                                                        const ParameterGroups& groups);
// Sets the learning rate of every parameter group: lr times the group's scale (1 without).
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr,
                       const std::vector<double>& scales = {});

// lr(step), step counting optimizer steps from 0: a linear warmup over optim.warmup_steps, then
// constant; step (x gamma every step_size steps); or cosine from lr to min_lr over the remaining
// total_steps.
class LrSchedule {
 public:
  LrSchedule(const OptimConfig& config, std::int64_t total_steps);
  double at(std::int64_t step) const;

 private:
  LrScheduleKind kind_;
  double lr_, min_lr_, gamma_;
  std::int64_t warmup_, step_size_, total_;
};

// Scales the gradients so that their global L2 norm is at most max_norm, and returns the norm
// before clipping. reduce_squared_sum turns this process's sum of squares into the model's:
// identity for replicated (data-parallel) parameters; a sum over the model-parallel group when
// parameters are split across ranks, so that every rank clips by the same, whole-model norm.
double clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm,
                      const std::function<double(double)>& reduce_squared_sum = {});

}  // namespace cohort::train
