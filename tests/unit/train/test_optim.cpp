#include <ATen/ops/full.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <boost/test/unit_test.hpp>
#include <cmath>

#include "cohort/error.hpp"
#include "cohort/train/config.hpp"
#include "cohort/train/optim.hpp"

using cohort::train::Config;
using cohort::train::LrSchedule;

BOOST_AUTO_TEST_SUITE(train_optim)

BOOST_AUTO_TEST_CASE(schedules_warm_up_then_hold_step_or_anneal) {
  const LrSchedule constant(Config::load("", {"optim.lr=0.1", "optim.warmup_steps=4"}).optim, 100);
  BOOST_TEST(constant.at(0) == 0.025);
  BOOST_TEST(constant.at(3) == 0.1);
  BOOST_TEST(constant.at(50) == 0.1);
  const LrSchedule step(Config::load("", {"optim.lr=1", "optim.schedule=step", "optim.step_size=10",
                                          "optim.gamma=0.5"})
                            .optim,
                        100);
  BOOST_TEST(step.at(9) == 1.0);
  BOOST_TEST(step.at(10) == 0.5);
  BOOST_TEST(step.at(25) == 0.25);
  const LrSchedule cosine(Config::load("", {"optim.lr=1", "optim.schedule=cosine",
                                            "optim.warmup_steps=10", "optim.min_lr=0.1"})
                              .optim,
                          110);
  BOOST_TEST(cosine.at(10) == 1.0);
  BOOST_TEST(std::abs(cosine.at(60) - 0.55) < 1e-12);  // halfway: the midpoint
  BOOST_TEST(std::abs(cosine.at(110) - 0.1) < 1e-12);
}

BOOST_AUTO_TEST_CASE(clipping_scales_to_the_global_norm_through_the_reduction) {
  at::Tensor a = at::full({4}, 1.0).requires_grad_(), b = at::full({9}, 1.0).requires_grad_();
  a.mutable_grad() = at::full({4}, 3.0);
  b.mutable_grad() = at::full({9}, 4.0 / 3.0);  // norms 6 and 4: global sqrt(52)
  const double norm = cohort::train::clip_grad_norm({a, b}, 1.0);
  BOOST_TEST(std::abs(norm - std::sqrt(52.0)) < 1e-6);  // (float32 gradients)
  const double after =
      std::sqrt(a.grad().pow(2).sum().item<double>() + b.grad().pow(2).sum().item<double>());
  BOOST_TEST(std::abs(after - 1.0) < 1e-5);
  // A model split over two ranks: the reduction adds the other half's squares.
  a.mutable_grad() = at::full({4}, 3.0);
  const double whole = cohort::train::clip_grad_norm({a}, 0, [](double s) { return s + 16.0; });
  BOOST_TEST(std::abs(whole - std::sqrt(52.0)) < 1e-6);
}

BOOST_AUTO_TEST_CASE(optimizers_follow_the_config) {
  at::Tensor p = at::full({2}, 1.0).requires_grad_();
  auto sgd = cohort::train::make_optimizer(Config::load("", {"optim.nesterov=true"}).optim, {p});
  BOOST_TEST(dynamic_cast<torch::optim::SGD*>(sgd.get()) != nullptr);
  auto adamw = cohort::train::make_optimizer(Config::load("", {"optim.name=adamw"}).optim, {p});
  BOOST_TEST(dynamic_cast<torch::optim::AdamW*>(adamw.get()) != nullptr);
  cohort::train::set_learning_rate(*adamw, 0.5);
  BOOST_TEST(adamw->param_groups()[0].options().get_lr() == 0.5);
  // Nesterov without momentum is refused at load (config_rules), before any optimizer exists.
  BOOST_CHECK_THROW(Config::load("", {"optim.nesterov=true", "optim.momentum=0"}),
                    cohort::ConfigError);
}

BOOST_AUTO_TEST_SUITE_END()
