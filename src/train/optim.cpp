#include "cohort/train/optim.hpp"

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <cmath>

namespace cohort::train {

// The settings were checked at load (optim.lr > 0, Nesterov with momentum: config_rules()).
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimConfig& o,
                                                        const std::vector<at::Tensor>& params) {
  if (o.name == Optimizer::kAdamw) {
    return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(o.lr)
                                                             .betas({o.beta1, o.beta2})
                                                             .eps(o.eps)
                                                             .weight_decay(o.weight_decay));
  }
  return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(o.lr)
                                                         .momentum(o.momentum)
                                                         .nesterov(o.nesterov)
                                                         .weight_decay(o.weight_decay));
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

LrSchedule::LrSchedule(const OptimConfig& o, std::int64_t total_steps)
    : kind_(o.schedule),
      lr_(o.lr),
      min_lr_(o.min_lr),
      gamma_(o.gamma),
      warmup_(o.warmup_steps),
      step_size_(o.step_size),
      total_(total_steps) {}

double LrSchedule::at(std::int64_t step) const {
  if (step < warmup_) return lr_ * static_cast<double>(step + 1) / static_cast<double>(warmup_);
  const std::int64_t after = step - warmup_;
  if (kind_ == LrScheduleKind::kStep)
    return lr_ * std::pow(gamma_, static_cast<double>(after / step_size_));
  if (kind_ == LrScheduleKind::kCosine) {
    const double span = static_cast<double>(std::max<std::int64_t>(1, total_ - warmup_));
    const double progress = std::min(1.0, static_cast<double>(after) / span);
    return min_lr_ + 0.5 * (lr_ - min_lr_) * (1.0 + std::cos(M_PI * progress));
  }
  return lr_;
}

double clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm,
                      const std::function<double(double)>& reduce_squared_sum) {
  double squared = 0;
  for (const auto& p : params) {
    if (p.grad().defined()) squared += p.grad().to(at::kDouble).pow(2).sum().item<double>();
  }
  if (reduce_squared_sum) squared = reduce_squared_sum(squared);
  const double norm = std::sqrt(squared);
  if (max_norm > 0 && norm > max_norm) {
    const double scale = max_norm / (norm + 1e-6);
    for (const auto& p : params) {
      if (p.grad().defined()) p.grad().mul_(scale);
    }
  }
  return norm;
}

}  // namespace cohort::train
