// select: the samples of some classes of a classification dataset, relabelled 0..k-1 in the
// order given, optionally the first N of each class (a few-shot set). The class names follow.
#include <ATen/core/Tensor.h>
#include <ATen/ops/from_blob.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "cohort/data/reader.hpp"
#include "cohort/data/tools.hpp"
#include "cohort/data/writer.hpp"
#include "cohort/error.hpp"
#include "cohort/io/output.hpp"

namespace cohort::data {
namespace {

constexpr std::int64_t kBlock = 4096;  // samples read at once

// The names of the kept classes, in their new order; "" when the input has none or they do not
// parse as a list of strings of the dataset's class count.
std::string selected_names(const DatasetInfo& info, const std::vector<std::int64_t>& classes) {
  if (info.class_names.empty()) return "";
  const auto names = nlohmann::json::parse(info.class_names, nullptr, false);
  if (!names.is_array() || static_cast<std::int64_t>(names.size()) != info.classes) return "";
  nlohmann::json kept = nlohmann::json::array();
  for (const auto c : classes) {
    if (!names[static_cast<std::size_t>(c)].is_string()) return "";
    kept.push_back(names[static_cast<std::size_t>(c)]);
  }
  return kept.dump();
}

using LabelMap = std::map<std::int64_t, std::int64_t>;  // old label -> new

// Pass 1: which samples, in their original order (a label of no kept class is skipped), and how
// many of each old label.
std::vector<std::int64_t> kept_samples(BatchReader& reader, const LabelMap& label_of,
                                       std::int64_t per_class, LabelMap& taken) {
  const std::int64_t n = reader.info().num_samples;
  std::vector<std::int64_t> kept;
  for (std::int64_t first = 0; first < n; first += kBlock) {
    std::vector<std::int64_t> part(static_cast<std::size_t>(std::min(kBlock, n - first)));
    for (std::size_t i = 0; i < part.size(); ++i) part[i] = first + static_cast<std::int64_t>(i);
    const at::Tensor labels = reader.read(part).targets.contiguous();
    const auto* label = labels.data_ptr<std::int64_t>();
    for (std::size_t i = 0; i < part.size(); ++i) {
      if (label_of.count(label[i]) == 0) continue;
      if (per_class > 0 && taken[label[i]] >= per_class) continue;
      ++taken[label[i]];
      kept.push_back(part[i]);
    }
  }
  return kept;
}

// Pass 2: those samples into `out`, relabelled, with the kept classes' names.
void copy_relabelled(BatchReader& reader, const std::vector<std::int64_t>& kept,
                     const LabelMap& label_of, const std::vector<std::int64_t>& classes,
                     const std::string& out) {
  const DatasetInfo& info = reader.info();
  WriterSpec spec = spec_like(info, static_cast<std::int64_t>(kept.size()));
  spec.classes = static_cast<std::int64_t>(classes.size());
  spec.extra.erase(std::remove_if(spec.extra.begin(), spec.extra.end(),
                                  [](const auto& kv) { return kv.first == "class_names"; }),
                   spec.extra.end());
  const std::string names = selected_names(info, classes);
  if (!names.empty()) spec.extra.push_back({"class_names", names});
  DatasetWriter writer(out, spec);
  for (std::size_t first = 0; first < kept.size(); first += kBlock) {
    const std::vector<std::int64_t> part(
        kept.begin() + static_cast<std::ptrdiff_t>(first),
        kept.begin() + static_cast<std::ptrdiff_t>(
                           std::min(first + static_cast<std::size_t>(kBlock), kept.size())));
    const Batch batch = reader.read(part);
    at::Tensor labels = batch.targets.contiguous().clone();
    auto* label = labels.data_ptr<std::int64_t>();
    for (std::int64_t i = 0; i < labels.numel(); ++i) label[i] = label_of.at(label[i]);
    writer.write_samples(static_cast<std::int64_t>(first), static_cast<std::int64_t>(part.size()),
                         batch.inputs.contiguous().data_ptr(), labels.data_ptr());
  }
  writer.commit();
}

}  // namespace

SelectResult select_classes(const std::string& in, const std::string& out,
                            const std::vector<std::int64_t>& classes, std::int64_t per_class) {
  io::OutputPlan().read(in, "PATH").write(out, "--out").check();
  ReaderOptions options;
  options.raw = true;
  options.pin_memory = false;
  BatchReader reader(in, options);
  const DatasetInfo& info = reader.info();
  COHORT_CHECK(info.kind == DatasetKind::kSamples && info.classes > 0 &&
                   info.target_shape.empty() && info.target_dtype == DType::kInt64,
               UsageError, "select: ", in,
               ": not a classification dataset (one int64 label per sample, classes recorded)");
  COHORT_CHECK(!classes.empty(), UsageError, "select: --classes lists none");
  COHORT_CHECK(per_class >= 0, UsageError, "select: --per-class ", per_class, " is negative");
  LabelMap label_of;
  for (const auto c : classes) {
    COHORT_CHECK(c >= 0 && c < info.classes, UsageError, "select: class ", c, " is not one of ", in,
                 "'s ", info.classes, " classes");
    COHORT_CHECK(label_of.emplace(c, static_cast<std::int64_t>(label_of.size())).second, UsageError,
                 "select: class ", c, " is listed twice");
  }
  LabelMap taken;
  const auto kept = kept_samples(reader, label_of, per_class, taken);
  COHORT_CHECK(!kept.empty(), UsageError, "select: ", in, " has no sample of those classes");
  copy_relabelled(reader, kept, label_of, classes, out);
  SelectResult result;
  result.samples = static_cast<std::int64_t>(kept.size());
  for (const auto c : classes) result.per_class.push_back(taken[c]);
  return result;
}

}  // namespace cohort::data
