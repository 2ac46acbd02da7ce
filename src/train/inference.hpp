// What `cohort predict` and `cohort eval` share: a trained model rebuilt for inference, and a
// dataset's samples run through it as evaluation during training runs them.
//
// The model comes from a Cohort checkpoint (the run's resolved config rebuilds it, its hash must
// be the checkpoint's; its tensors are read with their checksums verified, every one the model
// has and no other) or from a TorchScript file with a task. A TorchScript run's module kept
// beside its checkpoints is used when the run's own file moved. Samples of the dataset must have
// the shape of the run's training set when that set is still there. The model runs in eval mode
// without gradients (BatchNorm's running statistics, no dropout), data.transform in eval mode.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "cohort/data/reader.hpp"
#include "cohort/data/transform.hpp"
#include "cohort/models/model.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/train/predict.hpp"
#include "models/task.hpp"

namespace cohort::train {

struct InferenceBatch {
  at::Tensor outputs;  // float32, on the CPU, contiguous: [count, output...]
  at::Tensor targets;  // the dataset's, as the reader gives them (undefined: none)
};

class Inference {
 public:
  Inference(const ModelSource& source, const std::string& data);
  ~Inference();
  Inference(const Inference&) = delete;
  Inference& operator=(const Inference&) = delete;

  // Samples [first, first + count) of the dataset, in order. The model's output is checked for
  // every batch before anyone uses it: floating point, one row per sample, every row of the shape
  // the first batch had (ConfigError naming the model: nothing is written for a failed batch).
  InferenceBatch run(std::int64_t first, std::int64_t count);

  const Config& config() const { return config_; }
  const data::DatasetInfo& info() const { return info_; }
  const Task& task() const { return *task_; }
  const std::string& label() const { return label_; }              // the step directory or the file
  const std::string& step_dir() const { return step_dir_; }        // empty: a TorchScript file
  const std::string& run_dir() const { return run_dir_; }          // the checkpoint's run, or empty
  const std::string& config_file() const { return config_file_; }  // the run's config, or empty

 private:
  static data::ReaderOptions reader_options(const Config& config);

  Config config_;
  std::string label_, step_dir_, run_dir_, config_file_;
  data::DatasetInfo info_;
  std::unique_ptr<Task> task_;
  std::shared_ptr<Model> model_;
  std::optional<data::BatchReader> reader_;
  std::optional<data::BatchTransform> transform_;
  std::optional<std::vector<std::int64_t>> row_shape_;  // the first batch's output per sample
};

}  // namespace cohort::train
