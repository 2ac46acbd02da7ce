// A `cohort eval --json` record (format "cohort-eval", docs/models.md "Evaluate a checkpoint"),
// read back for `cohort report --eval FILE`: the report shows its metrics, each class's accuracy
// and the confusion matrix.
//
// The file is outside input: read with a size bound (16 MiB), every field checked for type and
// range before use (the matrix square, as many rows as classes, at most 4096 classes, counts >= 0
// that sum per row to the class's samples); anything else is an IoError naming the file and the
// field.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cohort::monitor {

struct EvalRecord {
  std::string file;  // where it was read from
  std::string model, data, task;
  std::int64_t step = -1, samples = 0;
  double loss = 0;
  std::vector<std::pair<std::string, double>> metrics;  // in the file's order
  std::vector<std::string> class_names;                 // empty: not classification
  std::vector<std::int64_t> confusion;                  // classes x classes, row: the true class
};

EvalRecord read_eval_record(const std::string& path);

// The report's "Evaluations" section (empty for none): per record the metrics, a per-class
// table and the confusion matrix shaded by each row's share (up to 50 classes; more: the table
// only).
std::string render_evaluations(const std::vector<EvalRecord>& records);

}  // namespace cohort::monitor
