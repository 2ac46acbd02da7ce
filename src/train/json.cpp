#include "cohort/train/json.hpp"

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

namespace cohort::train {

nlohmann::json to_json(const CheckpointEvalReport& r) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [name, value] : r.result.metrics) metrics[name] = value;
  nlohmann::json out = {{"format", "cohort-eval"},
                        {"format_version", 1},
                        {"model", r.model},
                        {"step", r.step},
                        {"data", r.data},
                        {"task", r.result.task},
                        {"samples", r.result.samples},
                        {"per_token", r.result.per_token},
                        {"loss", r.result.loss},
                        {"metrics", metrics},
                        {"ranks", r.ranks},
                        {"seconds", r.seconds}};
  if (r.classes() == 0) return out;
  nlohmann::json classes = nlohmann::json::array(), confusion = nlohmann::json::array();
  for (std::int64_t c = 0; c < r.classes(); ++c) {
    const double accuracy = r.class_accuracy(c);
    nlohmann::json row_of_class = {{"class", c},
                                   {"name", r.class_names[static_cast<std::size_t>(c)]},
                                   {"samples", r.class_samples(c)},
                                   {"correct", r.count(c, c)},
                                   {"accuracy", nullptr}};
    if (!std::isnan(accuracy)) row_of_class["accuracy"] = accuracy;  // null: no samples
    classes.push_back(row_of_class);
    nlohmann::json row = nlohmann::json::array();
    for (std::int64_t p = 0; p < r.classes(); ++p) row.push_back(r.count(c, p));
    confusion.push_back(row);
  }
  out["classes"] = classes;
  out["confusion"] = confusion;
  return out;
}

nlohmann::json to_json(const PredictSummary& s) {
  const double per_s = s.seconds > 0 ? static_cast<double>(s.samples) / s.seconds : 0;
  return {{"out", s.out},
          {"model", s.model},
          {"task", s.task},
          {"samples", s.samples},
          {"output_shape", s.output_shape},
          {"argmax", s.argmax},
          {"ranks", s.ranks},
          {"seconds", s.seconds},
          {"samples_per_s", per_s}};
}

nlohmann::json to_json(const TrainSummary& s) {
  nlohmann::json out = {{"steps", s.steps},
                        {"epochs", s.epochs},
                        {"ranks", s.ranks},
                        {"threads_per_rank", s.threads},
                        {"blas_threads_per_rank", s.blas_threads},
                        {"malloc_tuning", s.malloc_tuning},
                        {"launcher", s.launcher},
                        {"last_loss", s.last_loss},
                        {"seconds", s.seconds},
                        {"samples_per_s", s.samples_per_s},
                        {"steady_samples_per_s", s.steady_samples_per_s},
                        {"stop_reason", stop_reason_text(s)},
                        {"resumable", s.resumable},
                        {"config_hash", s.config_hash}};
  if (s.evaluated) {
    out["eval"] = {{"loss", s.eval.loss},
                   {"accuracy", s.eval.accuracy},
                   {"perplexity", s.eval.perplexity},
                   {"samples", s.eval.samples},
                   {"task", s.eval.task}};
    for (const auto& [name, value] : s.eval.metrics) out["eval"][name] = value;
  }
  return out;
}

}  // namespace cohort::train
