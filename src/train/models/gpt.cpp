// gpt: a decoder-only Transformer for token datasets. Token and learned position embeddings,
// model.blocks pre-LayerNorm blocks (causal multi-head self-attention, then a 4x GELU MLP, each
// with a residual), a final LayerNorm and an output head tied to the token embedding.
#include <ATen/ops/arange.h>
#include <ATen/ops/full.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/triu.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/dropout.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <cmath>
#include <limits>

#include "cohort/error.hpp"
#include "cohort/train/config.hpp"
#include "cohort/train/model.hpp"

namespace cohort::train {
namespace {

namespace F = torch::nn::functional;

at::Tensor maybe_dropout(const at::Tensor& x, double p, bool training) {
  return p > 0 ? F::dropout(x, F::DropoutFuncOptions().p(p).training(training)) : x;
}

class Block : public torch::nn::Module {
 public:
  Block(std::int64_t width, std::int64_t heads, double dropout)
      : heads_(heads),
        dropout_(dropout),
        ln1_(register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})))),
        qkv_(register_module("qkv", torch::nn::Linear(width, 3 * width))),
        proj_(register_module("proj", torch::nn::Linear(width, width))),
        ln2_(register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})))),
        fc_(register_module("fc", torch::nn::Linear(width, 4 * width))),
        out_(register_module("out", torch::nn::Linear(4 * width, width))) {}

  // x [B, L, D]; mask [L, L] with -inf above the diagonal.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& mask) {
    x_shape_check(x);
    const auto b = x.size(0), l = x.size(1), d = x.size(2), hd = d / heads_;
    auto qkv = qkv_->forward(ln1_->forward(x)).view({b, l, 3, heads_, hd}).permute({2, 0, 3, 1, 4});
    const at::Tensor q = qkv[0], k = qkv[1], v = qkv[2];  // [B, H, L, hd]
    at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hd));
    at::Tensor attention = at::softmax(scores + mask, -1);
    attention = maybe_dropout(attention, dropout_, is_training());
    at::Tensor y = at::matmul(attention, v).transpose(1, 2).reshape({b, l, d});
    at::Tensor h = x + maybe_dropout(proj_->forward(y), dropout_, is_training());
    at::Tensor m = out_->forward(F::gelu(fc_->forward(ln2_->forward(h))));
    return h + maybe_dropout(m, dropout_, is_training());
  }

 private:
  void x_shape_check(const at::Tensor& x) const {
    COHORT_CHECK(x.dim() == 3 && x.size(2) % heads_ == 0, Error, "gpt block: bad input shape");
  }
  std::int64_t heads_;
  double dropout_;
  torch::nn::LayerNorm ln1_;
  torch::nn::Linear qkv_, proj_;
  torch::nn::LayerNorm ln2_;
  torch::nn::Linear fc_, out_;
};

class Gpt : public Model {
 public:
  Gpt(const Config& config, const ModelInput& input)
      : context_(config.get_int("model.context")),
        dropout_(config.get_float("model.dropout")),
        width_(config.get_int("model.width")),
        layers_(config.get_int("model.blocks")),
        seq_len_(input.seq_len) {
    const std::int64_t width = width_;
    const std::int64_t heads = config.get_int("model.heads");
    const std::int64_t layers = layers_;
    COHORT_CHECK(input.vocab_size >= 2 && input.seq_len >= 1, ConfigError,
                 "model gpt: needs a token dataset (vocab_size and seq_len attributes)");
    COHORT_CHECK(heads >= 1 && width % heads == 0, ConfigError, "model.width ", width,
                 " must be divisible by model.heads ", heads);
    COHORT_CHECK(input.seq_len <= context_, ConfigError, "model.context ", context_,
                 " is shorter than the dataset's seq_len ", input.seq_len);
    tokens_ = register_module("tokens", torch::nn::Embedding(input.vocab_size, width));
    positions_ = register_module("positions", torch::nn::Embedding(context_, width));
    for (std::int64_t i = 0; i < layers; ++i) {
      blocks_.push_back(register_module("block" + std::to_string(i),
                                        std::make_shared<Block>(width, heads, dropout_)));
    }
    ln_f_ = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})));
    // GPT-2's initialization: N(0, 0.02) for embeddings and linear weights.
    for (auto& p : named_parameters()) {
      if (p.key().find("weight") != std::string::npos && p.value().dim() == 2) {
        torch::nn::init::normal_(p.value(), 0.0, 0.02);
      }
    }
  }

  // PaLM's estimate (Chowdhery et al. 2022, appendix B): 6 N per token for the weight matmuls
  // (forward 2 N, backward 4 N; N without the position table, the tied token table counts once
  // as the output head) plus 12 L W T per token for attention scores and values.
  double train_flops_per_sample() const override {
    const double n = static_cast<double>(parameter_count(*this) - positions_->weight.numel());
    const double t = static_cast<double>(seq_len_);
    return t * (6 * n + 12.0 * static_cast<double>(layers_ * width_) * t);
  }

  at::Tensor forward(const at::Tensor& inputs) override {
    const std::int64_t length = inputs.size(1);
    const at::Tensor position = at::arange(length, inputs.options().dtype(at::kLong));
    at::Tensor x = tokens_->forward(inputs) + positions_->forward(position);
    x = maybe_dropout(x, dropout_, is_training());
    const at::Tensor mask = at::triu(
        at::full({length, length}, -std::numeric_limits<float>::infinity(), x.options()), 1);
    for (auto& block : blocks_) x = block->forward(x, mask);
    // Tied head: logits against the token embedding.
    return at::matmul(ln_f_->forward(x), tokens_->weight.t());
  }

 private:
  std::int64_t context_;
  double dropout_;
  std::int64_t width_, layers_, seq_len_;
  torch::nn::Embedding tokens_{nullptr}, positions_{nullptr};
  std::vector<std::shared_ptr<Block>> blocks_;
  torch::nn::LayerNorm ln_f_{nullptr};
};

}  // namespace

COHORT_REGISTER_MODEL(gpt, [](const Config& config, const ModelInput& input) {
  return std::make_shared<Gpt>(config, input);
});

}  // namespace cohort::train
