#include <ATen/ops/cat.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>
#include <torch/nn/module.h>

#include <boost/test/unit_test.hpp>

#include "cohort/error.hpp"
#include "cohort/train/config.hpp"
#include "cohort/train/model.hpp"

using cohort::train::build_model;
using cohort::train::Config;
using cohort::train::ModelInput;

BOOST_AUTO_TEST_SUITE(train_models)

BOOST_AUTO_TEST_CASE(every_model_is_registered) {
  BOOST_TEST(cohort::train::model_names() ==
                 (std::vector<std::string>{"cnn", "fields_mlp", "gpt", "mlp", "torchscript"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(mlp_maps_samples_to_class_logits) {
  const auto config = Config::load("", {"model.name=mlp", "model.hidden=32,16"});
  auto model = build_model(config.model, ModelInput{{1, 8, 8}, 10, 0, 0});
  BOOST_TEST(model->forward(at::randn({5, 1, 8, 8})).sizes() == (at::IntArrayRef{5, 10}));
  // 64*32+32 + 32*16+16 + 16*10+10
  BOOST_TEST(cohort::train::parameter_count(*model) == 2080 + 528 + 170);
}

BOOST_AUTO_TEST_CASE(cnn_is_a_resnet_with_batchnorm_buffers) {
  const auto config = Config::load("", {"model.name=cnn", "model.width=8", "model.blocks=1"});
  auto model = build_model(config.model, ModelInput{{1, 28, 28}, 10, 0, 0});
  BOOST_TEST(model->forward(at::randn({3, 1, 28, 28})).sizes() == (at::IntArrayRef{3, 10}));
  BOOST_TEST(model->buffers().size() > 0u);  // running means and variances
  BOOST_TEST(model->forward(at::randn({2, 28, 28})).sizes() == (at::IntArrayRef{2, 10}));
}

BOOST_AUTO_TEST_CASE(gpt_is_causal_with_a_tied_head) {
  const auto config = Config::load("", {"model.name=gpt", "model.width=32", "model.heads=4",
                                        "model.blocks=2", "model.context=16"});
  auto model = build_model(config.model, ModelInput{{16}, 0, 50, 16});
  model->eval();
  at::Tensor tokens = at::randint(50, {2, 16});
  const at::Tensor logits = model->forward(tokens);
  BOOST_TEST(logits.sizes() == (at::IntArrayRef{2, 16, 50}));
  // Changing token 10 changes no logit before position 10.
  at::Tensor changed = tokens.clone();
  changed.select(1, 10).copy_((tokens.select(1, 10) + 1) % 50);
  const at::Tensor again = model->forward(changed);
  BOOST_TEST(again.narrow(1, 0, 10).equal(logits.narrow(1, 0, 10)));
  BOOST_TEST(!again.narrow(1, 10, 6).equal(logits.narrow(1, 10, 6)));
  // Tied: no separate output matrix (embeddings 50x32 + 16x32, 2 blocks, final LayerNorm).
  const std::int64_t block =
      2 * 32 + (32 * 96 + 96) + (32 * 32 + 32) + 2 * 32 + (32 * 128 + 128) + (128 * 32 + 32);
  BOOST_TEST(cohort::train::parameter_count(*model) == 50 * 32 + 16 * 32 + 2 * block + 2 * 32);
}

BOOST_AUTO_TEST_CASE(fields_mlp_takes_fields_by_name_and_ignores_padding) {
  cohort::data::FieldInfo tokens;
  tokens.name = "tokens";
  tokens.ragged = true;
  tokens.dtype = cohort::data::DType::kInt32;
  tokens.vocab_size = 20;
  cohort::data::FieldInfo features;
  features.name = "features";
  features.shape = {3};
  ModelInput input{{}, 4, 0, 0};
  input.fields = {tokens, features};
  const auto config =
      Config::load("", {"model.name=fields_mlp", "model.width=8", "model.hidden=16"});
  auto model = build_model(config.model, input);
  const at::Tensor ids = at::randint(20, {2, 5});
  const at::Tensor mask = at::ones({2, 5}, at::kBool);
  const at::Tensor x = at::randn({2, 3});
  const at::Tensor logits =
      model->forward_fields({{"tokens", ids}, {"tokens_mask", mask}, {"features", x}});
  BOOST_TEST(logits.sizes() == (at::IntArrayRef{2, 4}));
  // Three padding positions more, masked out (and in another order of fields): same logits.
  const at::Tensor padded = at::cat({ids, at::randint(20, {2, 3})}, 1);
  const at::Tensor padded_mask = at::cat({mask, at::zeros({2, 3}, at::kBool)}, 1);
  const at::Tensor again =
      model->forward_fields({{"features", x}, {"tokens_mask", padded_mask}, {"tokens", padded}});
  BOOST_TEST(at::allclose(again, logits, 1e-6, 1e-6));
  BOOST_CHECK_THROW(model->forward_fields({{"tokens", ids}, {"tokens_mask", mask}}),
                    cohort::UsageError);  // no 'features'
  // An integer field without a vocabulary cannot be embedded; no fields at all: not a field set.
  input.fields.front().vocab_size = 0;
  BOOST_CHECK_THROW(build_model(config.model, input), cohort::ConfigError);
  BOOST_CHECK_THROW(build_model(config.model, ModelInput{{64}, 10, 0, 0}), cohort::ConfigError);
}

BOOST_AUTO_TEST_CASE(a_model_the_data_does_not_fit_is_a_config_error) {
  const auto tokens = ModelInput{{16}, 0, 50, 16};
  BOOST_CHECK_THROW(build_model(Config::load("", {"model.name=mlp"}).model, tokens),
                    cohort::ConfigError);
  BOOST_CHECK_THROW(
      build_model(Config::load("", {"model.name=cnn"}).model, ModelInput{{64}, 10, 0, 0}),
      cohort::ConfigError);
  BOOST_CHECK_THROW(
      build_model(Config::load("", {"model.name=gpt", "model.width=30", "model.heads=4"}).model,
                  tokens),
      cohort::ConfigError);
  BOOST_CHECK_THROW(
      build_model(Config::load("", {"model.name=gpt", "model.context=8"}).model, tokens),
      cohort::ConfigError);
}

BOOST_AUTO_TEST_SUITE_END()
