#include "train/inference.hpp"

#include <ATen/ops/empty.h>
#include <torch/autograd.h>

#include <filesystem>
#include <map>
#include <optional>

#include "ckpt/files.hpp"
#include "cohort/ckpt/export.hpp"
#include "cohort/ckpt/inspect.hpp"
#include "cohort/ckpt/reader.hpp"
#include "cohort/error.hpp"
#include "cohort/io/dtype.hpp"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;

// What runs: the run's settings (or a TorchScript module's) and where its tensors are.
struct Source {
  Config config;
  std::string config_file;  // the run's config, or empty
  std::string step_dir;     // empty: a TorchScript file, weights included
  std::string label;        // for the summary and the output's attributes
};

Source from_checkpoint(const ModelSource& o) {
  Source s;
  s.step_dir = ckpt::resolve_checkpoint(o.checkpoint);
  const fs::path dir = fs::path(s.step_dir).parent_path();
  const std::string file =
      o.config.empty() ? (dir.parent_path() / "config.resolved.ini").string() : o.config;
  std::error_code error;
  COHORT_CHECK(fs::is_regular_file(file, error), UsageError, file,
               ": no such config (the run's config.resolved.ini, beside its checkpoint directory;"
               " give it with --config)");
  s.config = Config::load(file);
  s.config_file = file;
  const auto manifest = ckpt::read_manifest(s.step_dir);
  COHORT_CHECK(manifest.config_hash == s.config.hash(), UsageError, file, ": its hash ",
               s.config.hash(), " is not that of the config ", s.step_dir, " was written with (",
               manifest.config_hash, "); give that run's with --config");
  // A TorchScript run keeps its module beside its checkpoints: its own file may have moved.
  const fs::path kept = dir / ckpt::kRunModuleFile;
  if (s.config.model.name == "torchscript" && fs::is_regular_file(kept, error)) {
    s.config.model.file = kept.string();
  }
  s.label = s.step_dir;
  return s;
}

Source from_module(const ModelSource& o) {
  Source s;
  s.config = Config::load("", {"model.name=torchscript", "model.file=" + o.model_file,
                               "train.task=" + to_string(o.task)});
  s.label = o.model_file;
  return s;
}

// Overwrites every parameter and buffer of `model` with the checkpoint's tensor of its name
// ("model." + name); the checkpoint must hold each, with its shape, and no other model tensor.
void load_weights(torch::nn::Module& model, const std::string& step_dir) {
  ckpt::CheckpointReader reader(step_dir);
  std::map<std::string, const ckpt::TensorEntry*> entries;
  for (const auto& t : reader.manifest().tensors) {
    if (t.name.rfind("model.", 0) == 0) entries.emplace(t.name.substr(6), &t);
  }
  torch::NoGradGuard no_grad;
  const auto load = [&](const std::string& name, at::Tensor& tensor) {
    const auto it = entries.find(name);
    COHORT_CHECK(it != entries.end(), IoError, step_dir, ": no tensor model.", name,
                 ": the checkpoint is not of this model");
    const auto& entry = *it->second;
    COHORT_CHECK(entry.shape == tensor.sizes().vec(), IoError, step_dir, ": model.", name, " is ",
                 io::shape_text(entry.shape), ", the model's ",
                 io::shape_text(tensor.sizes().vec()),
                 ": does the dataset hold the samples this model was trained on? (or a "
                 "tensor-parallel checkpoint: predict reads whole tensors)");
    at::Tensor stored =
        at::empty(entry.shape, at::TensorOptions().dtype(ckpt::scalar_type_of(entry.dtype)));
    reader.read(entry, stored.data_ptr(), /*verify=*/true);
    tensor.copy_(stored);
    entries.erase(it);
  };
  for (auto& p : model.named_parameters()) load(p.key(), p.value());
  for (auto& b : model.named_buffers()) load(b.key(), b.value());
  COHORT_CHECK(entries.empty(), IoError, step_dir, ": holds model.",
               entries.empty() ? "" : entries.begin()->first, " (and ", entries.size(),
               " in all) that this model does not have");
}

// The run's training set, when it is still where the run read it: the samples to predict must
// have its shape (else the model built for them would not be the trained one).
void check_like_training(const Config& config, const data::DatasetInfo& info) {
  std::error_code error;
  if (config.data.path.empty() || !fs::exists(config.data.path, error)) return;
  const auto trained = data::describe(config.data.path);
  COHORT_CHECK(trained.sample_shape == info.sample_shape && trained.kind == info.kind, ConfigError,
               info.path, ": samples of ", io::shape_text(info.sample_shape),
               "; the model was trained on samples of ", io::shape_text(trained.sample_shape), " (",
               config.data.path, ")");
}

}  // namespace

Inference::Inference(const ModelSource& source, const std::string& data) {
  COHORT_CHECK(source.checkpoint.empty() != source.model_file.empty(), UsageError,
               "give --checkpoint DIR or --model FILE (one of them)");
  Source s = source.checkpoint.empty() ? from_module(source) : from_checkpoint(source);
  config_ = std::move(s.config);
  config_file_ = s.config_file;
  label_ = s.label;
  run_dir_ = s.step_dir.empty() ? "" : fs::path(s.step_dir).parent_path().parent_path().string();
  info_ = data::describe(data);
  if (!config_.data.target.empty()) data::select_target(info_, config_.data.target);
  if (!s.step_dir.empty()) check_like_training(config_, info_);
  task_ = std::make_unique<Task>(task_options(config_.train), info_);
  ModelInput input{info_.sample_shape, task_->outputs(), info_.vocab_size, info_.seq_len, nullptr};
  for (const auto& field : info_.fields) {
    if (!field.target) input.fields.push_back(field);
  }
  model_ = build_model(config_.model, input);
  if (!s.step_dir.empty()) load_weights(*model_, s.step_dir);
  model_->eval();
  step_dir_ = s.step_dir;
  reader_.emplace(data, reader_options(config_));
  if (!config_.data.transform.empty()) transform_.emplace(config_.data.transform, false);
}

Inference::~Inference() = default;

data::ReaderOptions Inference::reader_options(const Config& config) {
  data::ReaderOptions o;
  o.pin_memory = false;
  o.max_length = config.data.max_length;
  o.target = config.data.target;
  return o;
}

InferenceBatch Inference::run(std::int64_t first, std::int64_t count) {
  std::vector<std::int64_t> indices(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) indices[i] = first + i;
  data::Batch batch = reader_->read(indices);
  if (transform_) {
    batch.indices = indices;
    transform_->apply(batch, 0);
  }
  torch::NoGradGuard no_grad;
  const at::Tensor out =
      batch.fields.empty() ? model_->forward(batch.inputs) : model_->forward_fields(batch.fields);
  const auto shape = out.sizes().vec();
  COHORT_CHECK(out.dim() >= 1 && shape[0] == count && at::isFloatingType(out.scalar_type()),
               ConfigError, label_, ": the model returned ", io::shape_text(shape), " ",
               c10::toString(out.scalar_type()), " for a batch of ", count,
               " samples; one floating-point row per sample is expected");
  const std::vector<std::int64_t> row(shape.begin() + 1, shape.end());
  if (!row_shape_) row_shape_ = row;
  COHORT_CHECK(row == *row_shape_, ConfigError, label_, ": the model returned rows of ",
               io::shape_text(row), " for samples ", first, "..", first + count - 1,
               " and rows of ", io::shape_text(*row_shape_), " before; every row must be alike");
  return {out.to(at::kCPU, at::kFloat).contiguous(), batch.targets};
}

}  // namespace cohort::train
