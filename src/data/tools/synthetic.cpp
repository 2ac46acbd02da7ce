// make-synthetic: datasets with learnable structure, generated from one seed (std::mt19937_64),
// written in blocks so that memory stays bounded.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include "cohort/data/tools.hpp"
#include "cohort/data/writer.hpp"
#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/output.hpp"

namespace cohort::data {
namespace {

constexpr std::int64_t kBlock = 4096;

std::string shard_name(int shard, int shards) {
  char name[64];
  std::snprintf(name, sizeof name, "shard-%05d-of-%05d.h5", shard, shards);
  return name;
}

// Calls write(writer, first_global, count) for every block, over one file or several shards.
template <typename WriteBlock>
void write_sharded(const std::string& out, const SyntheticOptions& options, WriterSpec spec,
                   std::int64_t total, WriteBlock write_block) {
  const int shards = std::max(1, options.shards);
  COHORT_CHECK(total >= shards && shards <= 100000, UsageError, "make-synthetic: --shards ", shards,
               " for ", total,
               " samples would leave a shard empty (at most one shard per "
               "sample, 100000 in all)");
  if (shards > 1) io::make_directories(out);
  for (int s = 0; s < shards; ++s) {
    const std::int64_t begin = total * s / shards, end = total * (s + 1) / shards;
    spec.num_samples = end - begin;
    const std::string path = shards > 1 ? out + "/" + shard_name(s, shards) : out;
    DatasetWriter writer(path, spec);
    for (std::int64_t first = begin; first < end; first += kBlock) {
      write_block(writer, first - begin, std::min(kBlock, end - first));
    }
    writer.commit();
  }
}

void make_classification(const std::string& out, const SyntheticOptions& o) {
  COHORT_CHECK(o.features >= 1 && o.classes >= 2, UsageError,
               "make-synthetic: need --features >= 1 and --classes >= 2");
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Class centres 1.5 sigma apart on average in each feature: learnable, with overlap.
  std::vector<float> centres(static_cast<std::size_t>(o.classes * o.features));
  for (auto& c : centres) c = 1.5f * normal(rng);
  WriterSpec spec;
  spec.sample_shape = {o.features};
  spec.classes = o.classes;
  spec.split = o.split;
  spec.chunk_bytes = o.chunk_bytes;
  spec.source = "synthetic classification: seed " + std::to_string(o.seed) + ", " +
                std::to_string(o.classes) + " Gaussian clusters";
  std::uniform_int_distribution<std::int64_t> label(0, o.classes - 1);
  write_sharded(out, o, spec, o.samples, [&](DatasetWriter& w, std::int64_t first, std::int64_t n) {
    std::vector<float> x(static_cast<std::size_t>(n * o.features));
    std::vector<std::int64_t> y(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      y[i] = label(rng);
      for (std::int64_t f = 0; f < o.features; ++f) {
        x[i * o.features + f] = centres[y[i] * o.features + f] + normal(rng);
      }
    }
    w.write_samples(first, n, x.data(), y.data());
  });
}

void make_images(const std::string& out, const SyntheticOptions& o) {
  COHORT_CHECK(o.image_size >= 4 && o.channels >= 1 && o.classes >= 2, UsageError,
               "make-synthetic: need --image-size >= 4, --channels >= 1, --classes >= 2");
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::int64_t side = o.image_size, plane = side * side, numel = o.channels * plane;
  // Each class: three Gaussian blobs at random places, per channel brightness.
  std::vector<float> templates(static_cast<std::size_t>(o.classes * numel), 0.0f);
  for (std::int64_t c = 0; c < o.classes; ++c) {
    for (int blob = 0; blob < 3; ++blob) {
      const float cy = uniform(rng) * side, cx = uniform(rng) * side;
      const float radius = (0.1f + 0.15f * uniform(rng)) * side;
      for (std::int64_t ch = 0; ch < o.channels; ++ch) {
        const float bright = 80.0f + 120.0f * uniform(rng);
        for (std::int64_t p = 0; p < plane; ++p) {
          const float dy = p / side - cy, dx = p % side - cx;
          templates[c * numel + ch * plane + p] +=
              bright * std::exp(-(dy * dy + dx * dx) / (2 * radius * radius));
        }
      }
    }
  }
  WriterSpec spec;
  spec.sample_shape = {o.channels, side, side};
  spec.input_dtype = DType::kUInt8;
  spec.classes = o.classes;
  spec.split = o.split;
  spec.chunk_bytes = o.chunk_bytes;
  spec.mean = {64.0};
  spec.stddev = {64.0};
  spec.source = "synthetic images: seed " + std::to_string(o.seed) + ", blob templates + noise";
  std::uniform_int_distribution<std::int64_t> label(0, o.classes - 1);
  write_sharded(out, o, spec, o.samples, [&](DatasetWriter& w, std::int64_t first, std::int64_t n) {
    std::vector<std::uint8_t> x(static_cast<std::size_t>(n * numel));
    std::vector<std::int64_t> y(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      y[i] = label(rng);
      for (std::int64_t e = 0; e < numel; ++e) {
        const float v = templates[y[i] * numel + e] + 40.0f * normal(rng);
        x[i * numel + e] = static_cast<std::uint8_t>(std::clamp(v, 0.0f, 255.0f));
      }
    }
    w.write_samples(first, n, x.data(), y.data());
  });
}

void make_tokens(const std::string& out, const SyntheticOptions& o) {
  COHORT_CHECK(o.vocab >= 2 && o.vocab <= (1 << 30) && o.seq_len >= 1 && o.tokens > o.seq_len,
               UsageError, "make-synthetic: need --vocab >= 2, --seq-len >= 1, --tokens > seq-len");
  COHORT_CHECK(o.shards <= 1, UsageError, "make-synthetic: token streams are written as one file");
  std::mt19937_64 rng(o.seed);
  // A sparse Markov chain: each token has 4 likely successors (90%), else any token.
  std::uniform_int_distribution<std::int64_t> any(0, o.vocab - 1);
  std::vector<std::int64_t> successors(static_cast<std::size_t>(o.vocab * 4));
  for (auto& s : successors) s = any(rng);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  WriterSpec spec;
  spec.kind = DatasetKind::kTokens;
  spec.num_tokens = o.tokens;
  spec.token_dtype = o.vocab <= 65536 ? DType::kUInt16 : DType::kInt32;
  spec.seq_len = o.seq_len;
  spec.vocab_size = o.vocab;
  spec.split = o.split;
  spec.chunk_bytes = o.chunk_bytes;
  spec.source = "synthetic tokens: seed " + std::to_string(o.seed) + ", sparse Markov chain";
  DatasetWriter writer(out, spec);
  std::int64_t token = any(rng);
  const std::int64_t block = 1 << 20;
  for (std::int64_t first = 0; first < o.tokens; first += block) {
    const std::int64_t n = std::min(block, o.tokens - first);
    std::vector<std::int32_t> wide(static_cast<std::size_t>(n));
    for (auto& t : wide) {
      token = uniform(rng) < 0.9 ? successors[token * 4 + static_cast<std::int64_t>(rng() % 4)]
                                 : any(rng);
      t = static_cast<std::int32_t>(token);
    }
    if (spec.token_dtype == DType::kUInt16) {
      std::vector<std::uint16_t> narrow(wide.begin(), wide.end());
      writer.write_tokens(first, n, narrow.data());
    } else {
      writer.write_tokens(first, n, wide.data());
    }
  }
  writer.commit();
}

}  // namespace

void make_synthetic(const std::string& out, const SyntheticOptions& options) {
  COHORT_CHECK(options.samples >= 1, UsageError, "make-synthetic: --samples must be >= 1");
  io::OutputPlan()
      .write(out, "--out",
             options.shards > 1 ? io::OutputPlan::Kind::kDirectory : io::OutputPlan::Kind::kFile)
      .check();
  if (options.kind == "classification") return make_classification(out, options);
  if (options.kind == "images") return make_images(out, options);
  if (options.kind == "tokens") return make_tokens(out, options);
  COHORT_THROW(UsageError, "make-synthetic: unknown --kind '", options.kind,
               "' (classification, images, tokens)");
}

}  // namespace cohort::data
