// inspect: a dataset's layout and content statistics, read straight from the shards' HDF5 datasets
// in order (no LibTorch: `cohort data inspect` is one of the light commands).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include <cstring>

#include "cohort/data/tools.hpp"
#include "cohort/error.hpp"
#include "data/tools/inspect_values.hpp"
#include "io/h5/file.hpp"

namespace cohort::data {
namespace {

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
          {"tokenizer", info.tokenizer},
          {"tokenizer_checksum", info.tokenizer_checksum},
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

  // rows samples of numel_ values each; labels: one class per sample, or null.
  void add(const double* v, std::int64_t rows, const std::int64_t* labels) {
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
    if (labels != nullptr) {
      for (std::int64_t i = 0; i < rows; ++i) ++out_.class_histogram[labels[i]];
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

void inspect_samples(const DatasetInfo& info, const ShardInfo& shard, std::int64_t block,
                     Collector& collector) {
  const auto file = io::h5::open_file(shard.path);
  const auto inputs = io::h5::open_dataset(file.get(), "/inputs", shard.path);
  const auto targets = io::h5::open_dataset(file.get(), "/targets", shard.path);
  const bool labels = info.target_dtype == DType::kInt64 && info.target_shape.empty();
  std::int64_t target_numel = 1;
  for (auto d : info.target_shape) target_numel *= d;
  for (std::int64_t first = 0; first < shard.samples; first += block) {
    const io::h5::Run run{first, std::min(block, shard.samples - first)};
    const auto x = read_values(inputs.get(), info.input_dtype, run, info.sample_numel(),
                               shard.path + ": dataset '/inputs'");
    const auto y = read_values(targets.get(), info.target_dtype, run, target_numel,
                               shard.path + ": dataset '/targets'");
    std::vector<std::int64_t> classes;
    if (info.classes > 0 && info.target_dtype == DType::kInt64) {
      for (double v : y) {
        check_range(v, info.classes, shard.path + ": dataset '/targets'", "class target",
                    "classes");
      }
    }
    if (labels) {
      for (double v : y) classes.push_back(static_cast<std::int64_t>(v));
    }
    collector.add(x.data(), run.count, labels ? classes.data() : nullptr);
  }
}

// Sample i of a token shard is tokens [i*L, i*L + L); its target window reaches one further.
void inspect_tokens(const DatasetInfo& info, const ShardInfo& shard, std::int64_t block,
                    Collector& collector) {
  const auto file = io::h5::open_file(shard.path);
  const auto tokens = io::h5::open_dataset(file.get(), "/tokens", shard.path);
  const std::int64_t length = info.seq_len;
  const std::string where = shard.path + ": dataset '/tokens'";
  for (std::int64_t first = 0; first < shard.samples; first += block) {
    const std::int64_t count = std::min(block, shard.samples - first);
    const auto t = read_values(tokens.get(), info.input_dtype,
                               io::h5::Run{first * length, count * length + 1}, 1, where);
    for (double v : t) check_range(v, info.vocab_size, where, "token", "vocab_size");
    collector.add(t.data(), count, nullptr);
  }
}

}  // namespace

Inspection inspect(const std::string& path, std::int64_t max_features) {
  const auto start = std::chrono::steady_clock::now();
  Inspection result;
  result.info = describe(path);
  const auto& info = result.info;
  Collector collector(info, max_features, result);
  // Blocks of ~8 MiB, in order.
  const std::int64_t block = std::max<std::int64_t>(
      1, (8 << 20) / std::max<std::size_t>(1, info.sample_numel() * sizeof(double)));
  if (info.kind == DatasetKind::kFields) {
    inspect_fields(info, result);
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  }
  for (const auto& shard : info.shards) {
    if (info.kind == DatasetKind::kTokens) {
      inspect_tokens(info, shard, block, collector);
    } else {
      inspect_samples(info, shard, block, collector);
    }
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
  if (!inspection.fields.empty()) {
    out["fields"] = nlohmann::json::array();
    for (const auto& f : inspection.fields) {
      out["fields"].push_back({{"name", f.field.name},
                               {"location", f.field.location},
                               {"target", f.field.target},
                               {"ragged", f.field.ragged},
                               {"dtype", to_string(f.field.dtype)},
                               {"shape", f.field.shape},
                               {"vocab_size", f.field.vocab_size},
                               {"max_length", f.field.max_length},
                               {"mean", f.field.mean},
                               {"std", f.field.stddev},
                               {"values", f.total_values},
                               {"value_stats", stats_json(f.values)},
                               {"length_stats", stats_json(f.lengths)}});
    }
  }
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
  if (!info.tokenizer.empty()) {
    out << "  tokens  " << info.tokenizer << " (" << info.tokenizer_checksum << ")\n";
  }
  if (!info.source_checksum.empty()) out << "  sums    " << info.source_checksum << "\n";
  for (const auto& f : inspection.fields) {
    out << "  " << (f.field.target ? "target " : "input  ") << f.field.name << ": "
        << (f.field.ragged ? "ragged " : "") << to_string(f.field.dtype) << " "
        << shape(f.field.shape);
    if (f.field.vocab_size > 0) out << ", vocab " << f.field.vocab_size;
    if (f.field.ragged) {
      out << ", length min " << f.lengths.min << " mean " << f.lengths.mean << " max "
          << f.lengths.max;
    }
    out << "; values mean " << f.values.mean << " std " << f.values.stddev << " min "
        << f.values.min << " max " << f.values.max << "\n";
  }
  if (!inspection.fields.empty()) {
    if (!inspection.class_histogram.empty()) out << "  classes";
    for (const auto& [label, count] : inspection.class_histogram)
      out << " " << label << ":" << count;
    if (!inspection.class_histogram.empty()) out << "\n";
    return out.str();
  }
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
