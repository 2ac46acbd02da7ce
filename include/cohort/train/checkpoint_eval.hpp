// `cohort eval`: a trained model's metrics on a dataset, on N ranks (docs/models.md, "Evaluate a
// checkpoint"), as Lightning's trainer.validate() gives them and beyond: the task's metrics,
// and for classification each class's accuracy (its recall) and the confusion matrix.
//
// Protocol: collective over the session's ranks. Every rank rebuilds the model (a checkpoint of
// a run, or a TorchScript file with a task; train/inference.hpp) and runs its contiguous share
// of the samples in eval mode. The sums that evaluation during training keeps, and for
// classification the confusion counts, are all-reduced: N ranks give one process's figures, the
// counts exactly and the means up to the order of the sums. Top-k accuracy is reported only with
// more than k classes. Nothing is written; `--json` is the record (`cohort report --eval`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/train/predict.hpp"
#include "cohort/train/trainer.hpp"

namespace cohort::comm {
class MpiSession;
}

namespace cohort::train {

struct CheckpointEvalOptions {
  ModelSource model;
  std::string data;
  std::int64_t batch_size = 256;
};

struct CheckpointEvalReport {
  std::string model;       // the step directory or the module file
  std::int64_t step = -1;  // the checkpoint's step (-1: a TorchScript file)
  std::string data;
  EvalResult result;  // the task's metrics, as the eval line of training prints them
  int ranks = 1;
  double seconds = 0;
  // Classification only: the model's classes (its outputs), named by the dataset's class_names
  // where it has them ("0", "1", ... otherwise), and the counts of samples of true class i
  // (rows) predicted as class j (columns), row-major.
  std::vector<std::string> class_names;
  std::vector<std::int64_t> confusion;

  std::int64_t classes() const { return static_cast<std::int64_t>(class_names.size()); }
  std::int64_t count(std::int64_t truth, std::int64_t predicted) const {
    return confusion[static_cast<std::size_t>(truth * classes() + predicted)];
  }
  std::int64_t class_samples(std::int64_t truth) const;
  // Correct over samples of the class; NaN for a class without samples.
  double class_accuracy(std::int64_t truth) const;
};

CheckpointEvalReport evaluate_model(const CheckpointEvalOptions& options,
                                    const comm::MpiSession& session);

}  // namespace cohort::train
