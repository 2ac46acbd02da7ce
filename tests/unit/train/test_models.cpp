#include <ATen/ops/cat.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <sstream>

#include "cohort/error.hpp"
#include "cohort/train/config.hpp"
#include "cohort/train/model.hpp"

using cohort::train::build_model;
using cohort::train::Config;
using cohort::train::Model;
using cohort::train::ModelConfig;
using cohort::train::ModelInput;
using cohort::train::ModelOptions;
using cohort::train::register_model;

// A program's own model with its own section (what examples/custom-model does in a library).
struct ProgramOptions {
  std::int64_t depth = 2;
  std::vector<std::int64_t> widths;
  std::string kind = "a";
};

class ProgramModel : public Model {
 public:
  ProgramModel(const ProgramOptions& o, const ModelInput& input) : o_(o) {
    for (std::int64_t i = 0; i < o.depth; ++i) {
      register_parameter("w" + std::to_string(i), at::ones({1}));
    }
    extra_ = input.outputs;
  }
  at::Tensor forward(const at::Tensor& x) override {
    std::int64_t width = extra_ + (o_.kind == "b" ? 1 : 0);
    for (const auto w : o_.widths) width += w;
    return at::zeros({x.size(0), width});
  }

 private:
  ProgramOptions o_;
  std::int64_t extra_ = 0;
};

COHORT_REGISTER_MODEL(program_model,
                      ModelOptions<ProgramOptions>()
                          .key("depth", &ProgramOptions::depth, "2", "layers", 1, 8)
                          .key("widths", &ProgramOptions::widths, "", "widths", 1, 64)
                          .choice("kind", &ProgramOptions::kind, "a|b", "a", "kind"),
                      [](const ModelConfig&, const ProgramOptions& o, const ModelInput& input) {
                        return std::make_shared<ProgramModel>(o, input);
                      });

BOOST_AUTO_TEST_SUITE(train_models)

BOOST_AUTO_TEST_CASE(every_model_is_registered) {
  // kBuiltinModels, which the light `cohort` checks model.name against, is what registers; this
  // program's own model (below) registers beside them.
  std::vector<std::string> expected{"program_model"};
  std::istringstream builtins(cohort::train::kBuiltinModels);
  for (std::string name; std::getline(builtins, name, '|');) expected.push_back(name);
  std::sort(expected.begin(), expected.end());
  BOOST_TEST(cohort::train::model_names() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_program_model_gets_its_own_section_typed) {
  const auto config = Config::load("", {"model.name=program_model", "program_model.depth=3",
                                        "program_model.widths=4,5", "program_model.kind=b"});
  const auto model = build_model(config.model, ModelInput{{6}, 2, 0, 0});
  BOOST_TEST(model->parameters().size() == 3u);  // depth 3: one weight per layer
  BOOST_TEST(model->forward(at::zeros({2, 6})).size(1) == 4 + 5 + 2 + 1);  // widths, outputs, b
  // A ModelConfig made elsewhere (no options): the section's defaults.
  ModelConfig bare;
  bare.name = "program_model";
  BOOST_TEST(build_model(bare, ModelInput{{6}, 2, 0, 0})->parameters().size() == 2u);
  // Its keys are checked as the built-in ones are.
  const auto refused = [](std::vector<std::string> overrides, const std::string& expected) {
    try {
      Config::load("", overrides);
    } catch (const cohort::ConfigError& error) {
      BOOST_TEST(std::string(error.what()).find(expected) != std::string::npos, error.what());
      return;
    }
    BOOST_ERROR("no ConfigError for " << overrides.back());
  };
  refused({"program_model.depht=2"}, "unknown key; did you mean 'program_model.depth'?");
  refused({"program_model.depth=0"}, "program_model.depth: 0 is outside 1..8");
  refused({"program_model.kind=c"}, "'c' is not one of a|b");
  refused({"program_model.widths=4,x"}, "is not a comma-separated list of integers");
  refused({"model.name=program_modl"}, "no model 'program_modl'");
  // A section may not take a built-in section's name, nor a name be registered twice.
  BOOST_CHECK_THROW(
      register_model("program_model", [](const ModelConfig&,
                                         const ModelInput&) { return std::shared_ptr<Model>(); }),
      cohort::Error);
  BOOST_CHECK_THROW(register_model("data",
                                   ModelOptions<ProgramOptions>().key(
                                       "depth", &ProgramOptions::depth, "2", "layers"),
                                   [](const ModelConfig&, const ProgramOptions&,
                                      const ModelInput&) { return std::shared_ptr<Model>(); }),
                    cohort::Error);
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
