#include "cohort/train/checkpoint_eval.hpp"

#include <ATen/ops/bincount.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "cohort/ckpt/inspect.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/comm/mpi_session.hpp"
#include "cohort/error.hpp"
#include "models/task.hpp"
#include "train/inference.hpp"

namespace cohort::train {
namespace {

// The dataset's class_names (a JSON array of strings) for the model's `classes` outputs; a
// name missing, not a string, or an attribute that is not an array gives the class's number.
std::vector<std::string> class_names(const data::DatasetInfo& info, std::int64_t classes) {
  const auto names = nlohmann::json::parse(info.class_names, nullptr, /*allow_exceptions=*/false);
  std::vector<std::string> out;
  for (std::int64_t c = 0; c < classes; ++c) {
    const bool named = names.is_array() && c < static_cast<std::int64_t>(names.size()) &&
                       names[static_cast<std::size_t>(c)].is_string();
    out.push_back(named ? names[static_cast<std::size_t>(c)].get<std::string>()
                        : std::to_string(c));
  }
  return out;
}

// Adds one batch's (truth, predicted) pairs to the row-major counts.
void count_confusion(const at::Tensor& logits, const at::Tensor& targets, std::int64_t classes,
                     at::Tensor& counts) {
  const at::Tensor truth = targets.to(at::kCPU, at::kLong).flatten();
  const at::Tensor predicted = logits.argmax(-1).flatten();
  counts += at::bincount(truth * classes + predicted, {}, classes * classes).to(at::kDouble);
}

}  // namespace

std::int64_t CheckpointEvalReport::class_samples(std::int64_t truth) const {
  std::int64_t total = 0;
  for (std::int64_t p = 0; p < classes(); ++p) total += count(truth, p);
  return total;
}

double CheckpointEvalReport::class_accuracy(std::int64_t truth) const {
  const std::int64_t samples = class_samples(truth);
  return samples > 0 ? static_cast<double>(count(truth, truth)) / static_cast<double>(samples)
                     : std::numeric_limits<double>::quiet_NaN();
}

CheckpointEvalReport evaluate_model(const CheckpointEvalOptions& o,
                                    const comm::MpiSession& session) {
  const auto start = std::chrono::steady_clock::now();
  COHORT_CHECK(o.batch_size >= 1, UsageError, "eval: --batch-size must be >= 1");
  Inference inference(o.model, o.data);
  const Task& task = inference.task();
  const std::int64_t n = inference.info().num_samples;
  COHORT_CHECK(n >= 1, IoError, o.data, ": no samples to evaluate");
  // Every rank runs the first sample: the outputs' shape, checked against the task, and for
  // classification the model's classes (its logits; at least the dataset's labels).
  const auto shape = inference.run(0, 1).outputs.sizes().vec();
  task.check_output({shape.begin() + 1, shape.end()});
  const bool classification = task.kind() == TaskKind::kClassification;
  const std::int64_t classes = classification ? shape.back() : 0;
  std::vector<double> sums(task.sum_count(), 0.0);
  at::Tensor counts = at::zeros({classes * classes}, at::kDouble);
  const std::int64_t first = n * session.rank() / session.size();
  const std::int64_t last = n * (session.rank() + 1) / session.size();
  for (std::int64_t begin = first; begin < last; begin += o.batch_size) {
    const auto batch = inference.run(begin, std::min(o.batch_size, last - begin));
    task.accumulate(batch.outputs, batch.targets, sums);
    if (classification) count_confusion(batch.outputs, batch.targets, classes, counts);
  }
  // One all-reduce of the task's sums and the counts (doubles: exact below 2^53 samples).
  at::Tensor reduced = at::cat({at::tensor(sums, at::kDouble), counts});
  auto comm = comm::make_communicator(session, comm::Backend::kMpi, {});
  comm->all_reduce(reduced);
  const double* r = reduced.data_ptr<double>();
  CheckpointEvalReport report;
  report.result = task.finish({r, r + sums.size()});
  report.model = inference.label();
  report.data = o.data;
  report.ranks = session.size();
  if (!inference.step_dir().empty()) report.step = ckpt::read_manifest(inference.step_dir()).step;
  if (classification) {
    report.class_names = class_names(inference.info(), classes);
    for (std::int64_t i = 0; i < classes * classes; ++i) {
      report.confusion.push_back(static_cast<std::int64_t>(std::llround(r[sums.size() + i])));
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace cohort::train
