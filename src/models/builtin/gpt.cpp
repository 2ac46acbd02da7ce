// gpt: a decoder-only Transformer for token datasets. Token and learned position embeddings,
// model.blocks pre-LayerNorm blocks (causal multi-head self-attention, then a 4x GELU MLP, each
// with a residual), a final LayerNorm and an output head tied to the token embedding.
// Pipeline blocks: embed, block0..blockN-1, head (which reuses the token embedding).
// Tensor parallelism (parallel.tensor = t): Megatron's split. In attention, qkv is column-
// parallel by heads (each rank computes H/t heads) and proj row-parallel; in the MLP, fc is
// column-parallel and out row-parallel: two all-reduces per block in forward, two in backward.
// Embeddings, LayerNorms and the head are replicated on the tensor group.
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
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

#include "cohort/comm/communicator.hpp"
#include "cohort/error.hpp"
#include "cohort/models/model.hpp"
#include "cohort/pipeline/tensor_parallel.hpp"
#include "cohort/settings/config.hpp"

namespace cohort::models {

// The run's settings by their own names.
using namespace ::cohort::settings;  // NOLINT(google-build-using-namespace)

namespace {

namespace F = torch::nn::functional;

at::Tensor maybe_dropout(const at::Tensor& x, double p, bool training) {
  return p > 0 ? F::dropout(x, F::DropoutFuncOptions().p(p).training(training)) : x;
}

using pipeline::ColumnParallelLinear;
using pipeline::even_part;
using pipeline::RowParallelLinear;

at::Tensor causal_mask(std::int64_t length, const at::TensorOptions& options) {
  return at::triu(at::full({length, length}, -std::numeric_limits<float>::infinity(), options), 1);
}

class Block : public torch::nn::Module {
 public:
  Block(std::int64_t width, std::int64_t heads, double dropout)
      : heads_(heads),
        head_dim_(width / heads),
        dropout_(dropout),
        ln1_(register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})))),
        qkv_(register_module("qkv", ColumnParallelLinear(width, 3 * width))),
        proj_(register_module("proj", RowParallelLinear(width, width))),
        ln2_(register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})))),
        fc_(register_module("fc", ColumnParallelLinear(width, 4 * width))),
        out_(register_module("out", RowParallelLinear(4 * width, width))) {}

  // Keeps this rank's heads of attention and its 1/t of the MLP. qkv's rows are (q|k|v, head,
  // head dim): the rank's heads are one contiguous run in each of q, k and v.
  void shard(comm::Communicator* group) {
    const int rank = group->rank(), size = group->size();
    const std::int64_t width = proj_->weight.size(0);
    const at::Tensor heads = even_part(width, rank, size);
    qkv_->shard(group, at::cat({heads, heads + width, heads + 2 * width}));
    proj_->shard(group, heads);
    fc_->shard(group, even_part(4 * width, rank, size));
    out_->shard(group, even_part(4 * width, rank, size));
    heads_ /= size;
    tensor_ = size;
  }

  // x [B, L, D]; mask [L, L] with -inf above the diagonal.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& mask) {
    x_shape_check(x);
    // heads_ is this rank's share of the heads under tensor parallelism.
    const auto b = x.size(0), l = x.size(1), hd = head_dim_;
    auto qkv = qkv_->forward(ln1_->forward(x)).view({b, l, 3, heads_, hd}).permute({2, 0, 3, 1, 4});
    const at::Tensor q = qkv[0], k = qkv[1], v = qkv[2];  // [B, H, L, hd]
    at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hd));
    at::Tensor attention = at::softmax(scores + mask, -1);
    attention = maybe_dropout(attention, dropout_, is_training());
    at::Tensor y = at::matmul(attention, v).transpose(1, 2).reshape({b, l, heads_ * hd});
    at::Tensor h = x + maybe_dropout(proj_->forward(y), dropout_, is_training());
    at::Tensor m = out_->forward(F::gelu(fc_->forward(ln2_->forward(h))));
    return h + maybe_dropout(m, dropout_, is_training());
  }

 private:
  void x_shape_check(const at::Tensor& x) const {
    COHORT_CHECK(x.dim() == 3 && x.size(2) == head_dim_ * heads_ * tensor_, Error,
                 "gpt block: bad input shape");
  }
  std::int64_t heads_;
  std::int64_t head_dim_;
  std::int64_t tensor_ = 1;
  double dropout_;
  torch::nn::LayerNorm ln1_;
  ColumnParallelLinear qkv_;
  RowParallelLinear proj_;
  torch::nn::LayerNorm ln2_;
  ColumnParallelLinear fc_;
  RowParallelLinear out_;
};

class Gpt : public Model {
 public:
  Gpt(const ModelConfig& config, const ModelInput& input)
      : context_(config.context),
        dropout_(config.dropout),
        width_(config.width),
        layers_(config.blocks),
        seq_len_(input.seq_len) {
    const std::int64_t width = width_;
    const std::int64_t heads = config.heads;  // divides width: checked at load
    const std::int64_t layers = layers_;
    COHORT_CHECK(input.vocab_size >= 2 && input.seq_len >= 1, ConfigError,
                 "model gpt: needs a token dataset (vocab_size and seq_len attributes)");
    COHORT_CHECK(input.seq_len <= context_, ConfigError, "model.context ", context_,
                 " is shorter than the dataset's seq_len ", input.seq_len);
    tokens_ = register_module("tokens", torch::nn::Embedding(input.vocab_size, width));
    positions_ = register_module("positions", torch::nn::Embedding(context_, width));
    for (std::int64_t i = 0; i < layers; ++i) {
      blocks_.push_back(register_module("block" + std::to_string(i),
                                        std::make_shared<Block>(width, heads, dropout_)));
    }
    ln_f_ = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})));
    // GPT-2's initialization: N(0, 0.02) for embeddings and linear weights (a skeleton's
    // tensors get it from adjust_initial_value when each rank draws its own).
    for (auto& p : named_parameters()) {
      if (!input.skeleton && p.key().find("weight") != std::string::npos && p.value().dim() == 2) {
        torch::nn::init::normal_(p.value(), 0.0, 0.02);
      }
    }
    flops_per_sample_ = palm_flops();
    // Split after the whole model is initialised: each rank keeps its part of the same values.
    if (comm::Communicator* group = input.tensor_group; group != nullptr && group->size() > 1) {
      COHORT_CHECK(heads % group->size() == 0, ConfigError, "model.heads = ", heads,
                   " is not divisible by parallel.tensor = ", group->size());
      for (auto& block : blocks_) block->shard(group);
    }
    spec_ = make_blocks();
  }

  // PaLM's estimate (Chowdhery et al. 2022, appendix B): 6 N per token for the weight matmuls
  // (forward 2 N, backward 4 N; N without the position table, the tied token table counts once
  // as the output head) plus 12 L W T per token for attention scores and values.
  // (Of the whole model, counted before any tensor-parallel split.)
  double train_flops_per_sample() const override { return flops_per_sample_; }

  at::Tensor forward(const at::Tensor& inputs) override { return run_blocks(spec_, inputs); }
  std::vector<pipeline::BlockSpec> blocks() override { return spec_; }
  void adjust_initial_value(const std::string&, const std::string& tensor, at::Tensor& value,
                            at::Generator& generator) const override {
    if (tensor == "weight" && value.dim() == 2) value.normal_(0.0, 0.02, generator);
  }

 private:
  double palm_flops() const {
    const double n = static_cast<double>(parameter_count(*this) - positions_->weight.numel());
    const double t = static_cast<double>(seq_len_);
    return t * (6 * n + 12.0 * static_cast<double>(layers_ * width_) * t);
  }

  // embed (token + position), each Transformer block (the causal mask made per call: a block
  // may run in another stage), head (final LayerNorm, logits against the token embedding).
  std::vector<pipeline::BlockSpec> make_blocks() const {
    std::vector<pipeline::BlockSpec> out;
    out.push_back(
        {"embed",
         {{"tokens", tokens_.ptr()}, {"positions", positions_.ptr()}},
         [tokens = tokens_, positions = positions_, p = dropout_](const at::Tensor& in) mutable {
           const at::Tensor position = at::arange(in.size(1), in.options().dtype(at::kLong));
           const at::Tensor x = tokens->forward(in) + positions->forward(position);
           return maybe_dropout(x, p, tokens->is_training());
         }});
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
      const std::string name = "block" + std::to_string(i);
      out.push_back({name, {{name, blocks_[i]}}, [block = blocks_[i]](const at::Tensor& x) mutable {
                       return block->forward(x, causal_mask(x.size(1), x.options()));
                     }});
    }
    out.push_back({"head",
                   {{"ln_f", ln_f_.ptr()}, {"tokens", tokens_.ptr()}},
                   [ln_f = ln_f_, tokens = tokens_](const at::Tensor& x) mutable {
                     return at::matmul(ln_f->forward(x), tokens->weight.t());  // tied head
                   }});
    return out;
  }

  double flops_per_sample_ = 0;
  std::int64_t context_;
  double dropout_;
  std::int64_t width_, layers_, seq_len_;
  torch::nn::Embedding tokens_{nullptr}, positions_{nullptr};
  std::vector<std::shared_ptr<Block>> blocks_;
  torch::nn::LayerNorm ln_f_{nullptr};
  std::vector<pipeline::BlockSpec> spec_;
};

}  // namespace

COHORT_REGISTER_MODEL(gpt, [](const ModelConfig& config, const ModelInput& input) {
  return std::make_shared<Gpt>(config, input);
});

}  // namespace cohort::models
