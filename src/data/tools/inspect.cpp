// inspect: a dataset's layout and content statistics, read through the BatchReader (raw values).
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cohort/data/reader.hpp"
#include "cohort/data/tools.hpp"

namespace cohort::data {
namespace {

struct Accumulator {
  double sum = 0, sq = 0, min = std::numeric_limits<double>::infinity(),
         max = -std::numeric_limits<double>::infinity();
  std::int64_t count = 0;
  void add(double v) {
    sum += v;
    sq += v * v;
    min = std::min(min, v);
    max = std::max(max, v);
    ++count;
  }
  FeatureStats stats() const {
    FeatureStats s;
    if (count == 0) return s;
    s.mean = sum / static_cast<double>(count);
    s.stddev = std::sqrt(std::max(0.0, sq / static_cast<double>(count) - s.mean * s.mean));
    s.min = min;
    s.max = max;
    return s;
  }
};

nlohmann::json stats_json(const FeatureStats& s) {
  return {{"mean", s.mean}, {"std", s.stddev}, {"min", s.min}, {"max", s.max}};
}

nlohmann::json info_json(const DatasetInfo& info) {
  nlohmann::json shards = nlohmann::json::array();
  for (const auto& shard : info.shards) {
    shards.push_back({{"path", shard.path},
                      {"samples", shard.samples},
                      {"tokens", shard.tokens},
                      {"chunk", shard.chunk}});
  }
  return {{"path", info.path},
          {"kind", to_string(info.kind)},
          {"format_version", info.format_version},
          {"samples", info.num_samples},
          {"sample_shape", info.sample_shape},
          {"input_dtype", to_string(info.input_dtype)},
          {"target_shape", info.target_shape},
          {"target_dtype", to_string(info.target_dtype)},
          {"classes", info.classes},
          {"seq_len", info.seq_len},
          {"vocab_size", info.vocab_size},
          {"mean", info.mean},
          {"std", info.stddev},
          {"split", info.split},
          {"source", info.source},
          {"source_checksum", info.source_checksum},
          {"shards", shards}};
}

// Statistics over every value of every sample, per channel (the sample's first dimension), per
// value position (the first max_features), and the class or token histogram.
class Collector {
 public:
  Collector(const DatasetInfo& info, std::int64_t max_features, Inspection& out)
      : info_(info),
        numel_(info.sample_numel()),
        channels_(info.sample_shape.empty() ? 1 : info.sample_shape.front()),
        max_features_(max_features),
        per_channel_(static_cast<std::size_t>(channels_)),
        per_feature_(static_cast<std::size_t>(std::min(numel_, max_features))),
        out_(out) {}

  void add(const Batch& batch) {
    const at::Tensor x = batch.inputs.to(at::kDouble).contiguous();
    const double* v = x.data_ptr<double>();
    const std::int64_t rows = batch.inputs.size(0);
    const bool tokens = info_.kind == DatasetKind::kTokens;
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t e = 0; e < numel_; ++e) {
        const double value = v[i * numel_ + e];
        overall_.add(value);
        per_channel_[static_cast<std::size_t>(e * channels_ / numel_)].add(value);
        if (e < max_features_) per_feature_[static_cast<std::size_t>(e)].add(value);
        if (tokens) ++out_.class_histogram[static_cast<std::int64_t>(value)];
      }
    }
    if (!tokens && info_.target_dtype == DType::kInt64 && info_.target_shape.empty()) {
      const auto* y = batch.targets.data_ptr<std::int64_t>();
      for (std::int64_t i = 0; i < rows; ++i) ++out_.class_histogram[y[i]];
    }
  }

  void finish() {
    out_.features_total = numel_;
    out_.overall = overall_.stats();
    for (const auto& a : per_channel_) out_.channels.push_back(a.stats());
    for (const auto& a : per_feature_) out_.features.push_back(a.stats());
  }

 private:
  const DatasetInfo& info_;
  std::int64_t numel_, channels_, max_features_;
  Accumulator overall_;
  std::vector<Accumulator> per_channel_, per_feature_;
  Inspection& out_;
};

}  // namespace

Inspection inspect(const std::string& path, std::int64_t max_features) {
  const auto start = std::chrono::steady_clock::now();
  ReaderOptions options;
  options.raw = true;
  options.pin_memory = false;
  BatchReader reader(path, options);
  Inspection result;
  result.info = reader.info();
  const auto& info = result.info;
  Collector collector(info, max_features, result);
  // Blocks of ~8 MiB, in order: each is one run.
  const std::int64_t block =
      std::max<std::int64_t>(1, (8 << 20) / std::max<std::size_t>(1, info.sample_bytes()));
  for (std::int64_t first = 0; first < info.num_samples; first += block) {
    std::vector<std::int64_t> indices;
    for (std::int64_t i = first; i < std::min(first + block, info.num_samples); ++i) {
      indices.push_back(i);
    }
    collector.add(reader.read(indices));
  }
  collector.finish();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

nlohmann::json to_json(const Inspection& inspection) {
  nlohmann::json out = info_json(inspection.info);
  out["stats"] = stats_json(inspection.overall);
  out["channel_stats"] = nlohmann::json::array();
  for (const auto& s : inspection.channels) out["channel_stats"].push_back(stats_json(s));
  out["feature_stats"] = nlohmann::json::array();
  for (const auto& s : inspection.features) out["feature_stats"].push_back(stats_json(s));
  out["features_total"] = inspection.features_total;
  nlohmann::json histogram = nlohmann::json::object();
  for (const auto& [label, count] : inspection.class_histogram) {
    histogram[std::to_string(label)] = count;
  }
  out[inspection.info.kind == DatasetKind::kTokens ? "token_histogram" : "class_histogram"] =
      histogram;
  out["seconds"] = inspection.seconds;
  return out;
}

std::string to_text(const Inspection& inspection) {
  const auto& info = inspection.info;
  const auto shape = [](const std::vector<std::int64_t>& s) {
    std::ostringstream out;
    out << "[";
    for (std::size_t i = 0; i < s.size(); ++i) out << (i ? ", " : "") << s[i];
    return out.str() + "]";
  };
  std::ostringstream out;
  out << std::setprecision(4);
  out << info.path << ": " << to_string(info.kind) << " dataset, format v" << info.format_version
      << ", " << info.num_samples << " samples in " << info.shards.size() << " shard(s)\n";
  out << "  inputs  " << to_string(info.input_dtype) << " " << shape(info.sample_shape)
      << (info.kind == DatasetKind::kTokens ? " (seq_len " + std::to_string(info.seq_len) +
                                                  ", vocab " + std::to_string(info.vocab_size) + ")"
                                            : "")
      << "\n  targets " << to_string(info.target_dtype) << " " << shape(info.target_shape)
      << (info.classes > 0 ? ", " + std::to_string(info.classes) + " classes" : "") << "\n";
  for (const auto& shard : info.shards) {
    out << "  shard   " << shard.path << ": " << shard.samples << " samples, chunk "
        << (shard.chunk.empty() ? std::string("contiguous") : shape(shard.chunk)) << "\n";
  }
  if (!info.split.empty()) out << "  split   " << info.split << "\n";
  if (!info.source.empty()) out << "  source  " << info.source << "\n";
  if (!info.source_checksum.empty()) out << "  sums    " << info.source_checksum << "\n";
  const auto& s = inspection.overall;
  out << "  values  mean " << s.mean << "  std " << s.stddev << "  min " << s.min << "  max "
      << s.max << " (as stored, over " << inspection.features_total << " values per sample)\n";
  for (std::size_t f = 0; f < inspection.features.size() && f < 8; ++f) {
    const auto& fs = inspection.features[f];
    out << "  value[" << f << "] mean " << fs.mean << "  std " << fs.stddev << "  min " << fs.min
        << "  max " << fs.max << "\n";
  }
  if (!inspection.class_histogram.empty() && info.kind == DatasetKind::kSamples) {
    out << "  classes";
    for (const auto& [label, count] : inspection.class_histogram)
      out << " " << label << ":" << count;
    out << "\n";
  } else if (!inspection.class_histogram.empty()) {
    out << "  tokens  " << inspection.class_histogram.size() << " distinct\n";
  }
  return out.str();
}

}  // namespace cohort::data
