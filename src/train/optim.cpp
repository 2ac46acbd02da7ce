#include "cohort/train/optim.hpp"

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "cohort/error.hpp"
#include "settings/name_patterns.hpp"

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

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimConfig& o,
                                                        const ParameterGroups& groups) {
  auto optimizer =
      make_optimizer(o, groups.params.empty() ? std::vector<at::Tensor>{} : groups.params.front());
  for (std::size_t g = 1; g < groups.params.size(); ++g) {
    optimizer->add_param_group(torch::optim::OptimizerParamGroup(
        groups.params[g], optimizer->param_groups().front().options().clone()));
  }
  set_learning_rate(*optimizer, o.lr, groups.lr_scales);
  return optimizer;
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr,
                       const std::vector<double>& scales) {
  auto& groups = optimizer.param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    groups[g].options().set_lr(lr * (g < scales.size() ? scales[g] : 1.0));
  }
}

ParameterGroups group_parameters(
    const std::vector<std::pair<std::string, at::Tensor>>& named_parameters,
    const std::string& lr_scale, bool every_regex_matches) {
  const auto items = parse_lr_scale(lr_scale);
  std::vector<NamePattern> patterns;
  for (const auto& item : items) patterns.emplace_back(item.first, "optim.lr_scale");
  std::vector<bool> used(items.size(), false);
  std::map<double, std::size_t> group_of;  // factor -> group, groups in order of appearance
  ParameterGroups groups;
  for (const auto& [name, p] : named_parameters) {
    if (!p.requires_grad()) continue;  // frozen (model.freeze)
    double factor = 1;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!patterns[i].found_in(name)) continue;
      factor = items[i].second;
      used[i] = true;
      break;
    }
    const auto [it, added] = group_of.emplace(factor, groups.params.size());
    if (added) {
      groups.params.emplace_back();
      groups.lr_scales.push_back(factor);
    }
    groups.params[it->second].push_back(p);
  }
  for (std::size_t i = 0; i < items.size() && every_regex_matches; ++i) {
    COHORT_CHECK(used[i], ConfigError, "optim.lr_scale: '", items[i].first,
                 "' matches no trained parameter (docs/models.md: cohort ckpt inspect lists "
                 "the names)");
  }
  return groups;
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
