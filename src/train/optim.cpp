#include "cohort/train/optim.hpp"

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <cmath>

#include "cohort/error.hpp"
#include "cohort/train/config.hpp"

namespace cohort::train {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const Config& config,
                                                        const std::vector<at::Tensor>& params) {
  const double lr = config.get_float("optim.lr");
  COHORT_CHECK(lr > 0, ConfigError, "optim.lr must be > 0, not ", lr);
  if (config.get_string("optim.name") == "adamw") {
    return std::make_unique<torch::optim::AdamW>(
        params, torch::optim::AdamWOptions(lr)
                    .betas({config.get_float("optim.beta1"), config.get_float("optim.beta2")})
                    .eps(config.get_float("optim.eps"))
                    .weight_decay(config.get_float("optim.weight_decay")));
  }
  const double momentum = config.get_float("optim.momentum");
  const bool nesterov = config.get_bool("optim.nesterov");
  COHORT_CHECK(!nesterov || momentum > 0, ConfigError, "optim.nesterov needs optim.momentum > 0");
  return std::make_unique<torch::optim::SGD>(
      params, torch::optim::SGDOptions(lr).momentum(momentum).nesterov(nesterov).weight_decay(
                  config.get_float("optim.weight_decay")));
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

LrSchedule::LrSchedule(const Config& config, std::int64_t total_steps)
    : kind_(config.get_string("optim.schedule")),
      lr_(config.get_float("optim.lr")),
      min_lr_(config.get_float("optim.min_lr")),
      gamma_(config.get_float("optim.gamma")),
      warmup_(config.get_int("optim.warmup_steps")),
      step_size_(config.get_int("optim.step_size")),
      total_(total_steps) {
  COHORT_CHECK(warmup_ >= 0 && step_size_ >= 1, ConfigError,
               "optim.warmup_steps must be >= 0 and optim.step_size >= 1");
}

double LrSchedule::at(std::int64_t step) const {
  if (step < warmup_) return lr_ * static_cast<double>(step + 1) / static_cast<double>(warmup_);
  const std::int64_t after = step - warmup_;
  if (kind_ == "step") return lr_ * std::pow(gamma_, static_cast<double>(after / step_size_));
  if (kind_ == "cosine") {
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
