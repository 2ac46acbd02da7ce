#include "cohort/train/predict.hpp"

#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/tensor.h>
#include <torch/autograd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>

#include "ckpt/files.hpp"
#include "cohort/ckpt/export.hpp"
#include "cohort/ckpt/inspect.hpp"
#include "cohort/ckpt/reader.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/comm/mpi_session.hpp"
#include "cohort/data/reader.hpp"
#include "cohort/data/transform.hpp"
#include "cohort/error.hpp"
#include "cohort/io/dtype.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/unique_fd.hpp"
#include "cohort/train/model.hpp"
#include "io/h5/file.hpp"
#include "io/h5/h5_check.hpp"
#include "train/task.hpp"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;
namespace h5 = io::h5;

// What predicts: the run's settings (or a TorchScript module's) and where its tensors are.
struct Source {
  Config config;
  std::string step_dir;  // empty: a TorchScript file, weights included
  std::string label;     // for the summary and the output's attributes
};

Source from_checkpoint(const PredictOptions& o) {
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

Source from_module(const PredictOptions& o) {
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

// Reads samples and runs the model on them, as evaluation does (data.transform in eval mode).
class Runner {
 public:
  Runner(const Config& config, const std::string& data, Model& model)
      : reader_(data, reader_options(config)), model_(model) {
    if (!config.data.transform.empty()) transform_.emplace(config.data.transform, false);
  }
  const data::DatasetInfo& info() const { return reader_.info(); }
  at::Tensor run(std::int64_t first, std::int64_t count) {
    std::vector<std::int64_t> indices(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) indices[i] = first + i;
    data::Batch batch = reader_.read(indices);
    if (transform_) {
      batch.indices = indices;
      transform_->apply(batch, 0);
    }
    const at::Tensor out =
        batch.fields.empty() ? model_.forward(batch.inputs) : model_.forward_fields(batch.fields);
    return out.to(at::kCPU, at::kFloat).contiguous();
  }

 private:
  static data::ReaderOptions reader_options(const Config& config) {
    data::ReaderOptions o;
    o.pin_memory = false;
    o.max_length = config.data.max_length;
    o.target = config.data.target;
    return o;
  }
  data::BatchReader reader_;
  std::optional<data::BatchTransform> transform_;
  Model& model_;
};

// Where each rank writes in "<out>.partial": the byte offsets of /outputs and /argmax (-1: none).
struct OutputLayout {
  std::int64_t outputs = -1, argmax = -1;
  std::int64_t output_row_bytes = 0, argmax_row_bytes = 0;
};

// Rank 0: the file with every dataset allocated (not written), and its attributes.
OutputLayout create_output(const std::string& partial, const PredictSummary& s,
                           const std::vector<std::int64_t>& argmax_shape, const std::string& data) {
  h5::Hid file = h5::create_file(partial);
  OutputLayout layout;
  if (s.task != "language_model") {
    h5::Hid outputs = h5::create_preallocated_dataset(file.get(), "outputs", io::DType::kFloat32,
                                                      s.samples, s.output_shape, partial);
    layout.outputs = h5::data_offset(outputs.get(), partial);
  }
  if (s.argmax) {
    h5::Hid argmax = h5::create_preallocated_dataset(file.get(), "argmax", io::DType::kInt64,
                                                     s.samples, argmax_shape, partial);
    layout.argmax = h5::data_offset(argmax.get(), partial);
  }
  h5::write_attribute(file.get(), "format", std::string("cohort-predictions"), partial);
  h5::write_attribute(file.get(), "format_version", std::int64_t{1}, partial);
  h5::write_attribute(file.get(), "model", s.model, partial);
  h5::write_attribute(file.get(), "dataset", data, partial);
  h5::write_attribute(file.get(), "task", s.task, partial);
  return layout;
}

void write_at(int fd, const at::Tensor& rows, std::int64_t offset, const std::string& path) {
  const auto* bytes = static_cast<const char*>(rows.data_ptr());
  std::size_t left = rows.numel() * rows.element_size();
  while (left > 0) {
    const ssize_t n = ::pwrite(fd, bytes, left, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    COHORT_CHECK(n > 0, IoError, path, ": cannot write predictions: ", std::strerror(errno));
    bytes += n;
    offset += n;
    left -= static_cast<std::size_t>(n);
  }
}

// This rank's rows [first, last), batch by batch, at their places in the file; then fsync.
void write_share(Runner& runner, const PredictOptions& o, const OutputLayout& layout,
                 const std::string& partial, std::int64_t first, std::int64_t last, bool argmax) {
  UniqueFd fd(::open(partial.c_str(), O_WRONLY | O_CLOEXEC));
  COHORT_CHECK(fd.get() >= 0, IoError, partial, ": cannot open: ", std::strerror(errno));
  torch::NoGradGuard no_grad;
  for (std::int64_t begin = first; begin < last; begin += o.batch_size) {
    const std::int64_t count = std::min(o.batch_size, last - begin);
    const at::Tensor out = runner.run(begin, count);
    if (layout.outputs >= 0) {
      write_at(fd.get(), out, layout.outputs + begin * layout.output_row_bytes, partial);
    }
    if (argmax) {
      write_at(fd.get(), out.argmax(-1).contiguous(),
               layout.argmax + begin * layout.argmax_row_bytes, partial);
    }
    if (o.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.delay_ms));
  }
  COHORT_CHECK(::fsync(fd.get()) == 0, IoError, partial, ": fsync: ", std::strerror(errno));
}

// Collective: rank 0 creates "<out>.partial" and broadcasts where its datasets lie; every rank
// writes its contiguous share of the samples; once all have synced, rank 0 renames it to `out`.
void write_predictions(Runner& runner, const PredictOptions& o, const PredictSummary& s,
                       const std::vector<std::int64_t>& argmax_shape,
                       const comm::MpiSession& session) {
  auto comm = comm::make_communicator(session, comm::Backend::kMpi, {});
  const std::string partial = o.out + ".partial";
  OutputLayout layout;
  at::Tensor offsets = at::full({2}, -1, at::kLong);
  if (session.rank() == 0) {
    layout = create_output(partial, s, argmax_shape, o.data);
    offsets[0] = layout.outputs;
    offsets[1] = layout.argmax;
  }
  comm->broadcast_async(offsets, 0)->wait();
  layout.outputs = offsets[0].item<std::int64_t>();
  layout.argmax = offsets[1].item<std::int64_t>();
  layout.output_row_bytes =
      io::shape_numel(s.output_shape) * static_cast<std::int64_t>(sizeof(float));
  layout.argmax_row_bytes =
      io::shape_numel(argmax_shape) * static_cast<std::int64_t>(sizeof(std::int64_t));
  const std::int64_t n = s.samples, rank = session.rank(), world = session.size();
  write_share(runner, o, layout, partial, n * rank / world, n * (rank + 1) / world, s.argmax);
  at::Tensor synced = at::ones({1}, at::kLong);
  comm->all_reduce(synced);  // every rank's rows are on disk
  if (session.rank() == 0) io::commit_file(partial, o.out);
}

}  // namespace

PredictSummary predict(const PredictOptions& o, const comm::MpiSession& session) {
  const auto start = std::chrono::steady_clock::now();
  COHORT_CHECK(o.checkpoint.empty() != o.model_file.empty(), UsageError,
               "predict: give --checkpoint DIR or --model FILE (one of them)");
  COHORT_CHECK(o.batch_size >= 1, UsageError, "predict: --batch-size must be >= 1");
  const fs::path parent = fs::absolute(o.out).parent_path();
  std::error_code error;
  COHORT_CHECK(fs::is_directory(parent, error) && ::access(parent.c_str(), W_OK) == 0, UsageError,
               o.out, ": its directory does not exist or is not writable");
  Source source = o.checkpoint.empty() ? from_module(o) : from_checkpoint(o);
  auto info = data::describe(o.data);
  if (!source.config.data.target.empty()) data::select_target(info, source.config.data.target);
  if (!source.step_dir.empty()) check_like_training(source.config, info);
  const Task task(task_options(source.config.train), info);
  ModelInput input{info.sample_shape, task.outputs(), info.vocab_size, info.seq_len, nullptr};
  for (const auto& field : info.fields) {
    if (!field.target) input.fields.push_back(field);
  }
  auto model = build_model(source.config.model, input);
  if (!source.step_dir.empty()) load_weights(*model, source.step_dir);
  model->eval();
  PredictSummary s;
  s.out = o.out;
  s.model = source.label;
  s.task = to_string(task.kind());
  s.samples = info.num_samples;
  s.ranks = session.size();
  COHORT_CHECK(s.samples >= 1, IoError, o.data, ": no samples to predict");
  Runner runner(source.config, o.data, *model);
  torch::NoGradGuard no_grad;
  const auto shape = runner.run(0, 1).sizes().vec();  // every rank: the same shape
  s.output_shape.assign(shape.begin() + 1, shape.end());
  task.check_output(s.output_shape);
  s.argmax = task.kind() == TaskKind::kClassification || task.kind() == TaskKind::kLanguageModel;
  const std::vector<std::int64_t> argmax_shape(shape.begin() + 1, shape.end() - 1);
  if (task.kind() == TaskKind::kLanguageModel) s.output_shape.clear();  // argmax only
  write_predictions(runner, o, s, argmax_shape, session);
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

}  // namespace cohort::train
