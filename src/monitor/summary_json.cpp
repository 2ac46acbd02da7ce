// Summary records as metrics.jsonl holds them: to_json() for the writer, summary_from_json() for
// `cohort report` and `cohort top`, which read files from anywhere (every index it returns is
// checked). Apart from summary.cpp so that the readers and their fuzz target need no ATen.
#include <nlohmann/json.hpp>

#include "cohort/error.hpp"
#include "cohort/monitor/summary.hpp"

namespace cohort::monitor {

const char* field_name(Field field) {
  static const char* const kNames[kFields] = {"step_s",
                                              "data_s",
                                              "forward_s",
                                              "backward_s",
                                              "comm_s",
                                              "optimizer_s",
                                              "checkpoint_s",
                                              "other_s",
                                              "busy_s",
                                              "cpu_util",
                                              "rss_bytes",
                                              "gpu_util_percent",
                                              "gpu_memory_bytes",
                                              "gpu_power_watts",
                                              "allreduce_count",
                                              "allreduce_bytes",
                                              "allreduce_latency_s",
                                              "busbw_bytes_per_s",
                                              "host_load",
                                              "host_cores"};
  return kNames[static_cast<int>(field)];
}

nlohmann::json to_json(const Summary& s) {
  nlohmann::json fields = nlohmann::json::object();
  for (int f = 0; f < kFields; ++f) {
    const FieldStats& st = s.fields[static_cast<std::size_t>(f)];
    fields[field_name(static_cast<Field>(f))] = {{"mean", st.mean},
                                                 {"min", st.min},
                                                 {"max", st.max},
                                                 {"min_rank", st.min_rank},
                                                 {"max_rank", st.max_rank}};
  }
  return {{"event", "summary"},
          {"first_step", s.first_step},
          {"step", s.step},
          {"window_steps", s.window_steps},
          {"ranks", s.ranks},
          {"samples_per_s", s.samples_per_s},
          {"tokens_per_s", s.tokens_per_s},
          {"loss", s.loss},
          {"last_loss", s.last_loss},
          {"lr", s.lr},
          {"grad_norm", s.grad_norm},
          {"model_flops_per_s", s.model_flops_per_s},
          {"mfu", s.mfu},
          {"gpu", s.gpu},
          {"slowest_rank", s.slowest_rank},
          {"rank_busy_s", s.rank_busy},
          {"rank_step_s", s.rank_step},
          {"fields", fields}};
}

Summary summary_from_json(const nlohmann::json& r) {
  Summary s;
  s.first_step = r.at("first_step").get<std::int64_t>();
  s.step = r.at("step").get<std::int64_t>();
  s.window_steps = r.at("window_steps").get<std::int64_t>();
  COHORT_CHECK(r.at("ranks").is_number_integer() && r.at("ranks").get<std::int64_t>() >= 1 &&
                   r.at("ranks").get<std::int64_t>() <= (1 << 24),
               IoError, "summary: field 'ranks' is not a rank count");
  s.ranks = static_cast<int>(r.at("ranks").get<std::int64_t>());
  s.samples_per_s = r.at("samples_per_s").get<double>();
  s.tokens_per_s = r.value("tokens_per_s", 0.0);
  s.loss = r.at("loss").get<double>();
  s.last_loss = r.value("last_loss", s.loss);
  s.lr = r.value("lr", 0.0);
  s.grad_norm = r.value("grad_norm", 0.0);
  s.model_flops_per_s = r.value("model_flops_per_s", 0.0);
  s.mfu = r.value("mfu", 0.0);
  s.gpu = r.value("gpu", false);
  s.slowest_rank = r.value("slowest_rank", 0);
  s.rank_busy = r.at("rank_busy_s").get<std::vector<double>>();
  s.rank_step = r.at("rank_step_s").get<std::vector<double>>();
  // Indices into per-rank lists come from the file: a negative or too large one is refused here
  // (the caller counts the line as bad), never used to index.
  COHORT_CHECK(s.ranks >= 1 && s.ranks <= (1 << 24) && s.step >= 0 && s.first_step >= 0 &&
                   s.window_steps >= 0 && s.slowest_rank >= 0 && s.slowest_rank < s.ranks &&
                   s.rank_busy.size() <= static_cast<std::size_t>(s.ranks) &&
                   s.rank_step.size() <= static_cast<std::size_t>(s.ranks),
               IoError, "summary at step ", s.step, ": ranks, steps or slowest_rank out of range");
  const auto& fields = r.at("fields");
  for (int f = 0; f < kFields; ++f) {
    const auto it = fields.find(field_name(static_cast<Field>(f)));
    if (it == fields.end()) continue;  // a field added by a later version
    FieldStats& st = s.fields[static_cast<std::size_t>(f)];
    st.mean = it->at("mean").get<double>();
    st.min = it->at("min").get<double>();
    st.max = it->at("max").get<double>();
    for (const char* key : {"min_rank", "max_rank"}) {
      COHORT_CHECK(it->contains(key) && it->at(key).is_number_integer(), IoError,
                   "summary at step ", s.step, ": field '", it.key(), "' has no integer ", key);
    }
    const auto in_ranks = [&](const char* key) {
      const auto v = it->at(key).get<std::int64_t>();
      COHORT_CHECK(v >= 0 && v < s.ranks, IoError, "summary at step ", s.step, ": field '",
                   it.key(), "' names a rank outside 0..", s.ranks - 1);
      return static_cast<int>(v);
    };
    st.min_rank = in_ranks("min_rank");
    st.max_rank = in_ranks("max_rank");
  }
  return s;
}

}  // namespace cohort::monitor
