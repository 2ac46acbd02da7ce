// Distributed inference: a trained model's outputs for every sample of a dataset, written in
// sample order to one HDF5 file (`cohort predict`, docs/models.md "Predict").
//
// Protocol: collective over the session's ranks. The model comes from a Cohort checkpoint (the
// run's resolved config rebuilds it, its tensors come from the checkpoint, checksums verified)
// or from a TorchScript file. Each rank runs its contiguous share of the samples in eval mode
// (no gradients, BatchNorm's running statistics, no dropout), rank 0 creates "<out>.partial"
// with the whole output's datasets, the ranks write their rows into it one after another, and
// rank 0 renames it to `out` (fsynced, then the directory): a run that dies leaves no file under
// the final name. Output: /outputs float32 [N, output...] (logits, or values for regression),
// /argmax int64 [N] (or [N, T] for language models) for classification and language models,
// attributes naming the model, the dataset and the task.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/settings/config.hpp"

namespace cohort::comm {
class MpiSession;
}

namespace cohort::train {

// The trained model of `cohort predict` and `cohort eval`.
struct ModelSource {
  // One of the two: a checkpoint directory (its latest) or a step directory...
  std::string checkpoint;
  // ...with the run's resolved config (empty: config.resolved.ini in the checkpoint directory's
  // parent, where `cohort train` writes it); its hash must be the checkpoint's.
  std::string config;
  // ...or a TorchScript module (e.g. `cohort ckpt export --torchscript`), with `task`.
  std::string model_file;
  TaskKind task = TaskKind::kAuto;  // --model only; a checkpoint's run says its own
};

struct PredictOptions {
  ModelSource model;
  std::string data;
  std::string out;
  std::int64_t batch_size = 256;
  std::int64_t delay_ms = 0;  // tests: sleep this long after each batch
};

struct PredictSummary {
  std::string out;
  std::string model;  // the checkpoint step directory or the module file
  std::string task;   // resolved
  std::int64_t samples = 0;
  std::vector<std::int64_t> output_shape;  // one sample's
  bool argmax = false;
  int ranks = 1;
  double seconds = 0;
};

PredictSummary predict(const PredictOptions& options, const comm::MpiSession& session);

}  // namespace cohort::train
