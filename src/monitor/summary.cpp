#include "cohort/monitor/summary.hpp"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "cohort/comm/communicator.hpp"
#include "cohort/error.hpp"

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
                                              "busbw_bytes_per_s"};
  return kNames[static_cast<int>(field)];
}

MetricsAggregator::MetricsAggregator(comm::Communicator& control, int allreduce_ranks,
                                     ModelCost cost)
    : control_(control), allreduce_ranks_(allreduce_ranks), cost_(cost) {}

void MetricsAggregator::add(const StepSample& s) {
  if (steps_ == 0) first_step_ = s.step;
  ++steps_;
  last_step_ = s.step;
  seconds_ += s.seconds;
  for (int i = 0; i < kPhases; ++i) phase_[static_cast<std::size_t>(i)] += s.phase[i];
  loss_sum_ += s.loss;
  last_loss_ = s.loss;
  if (std::isfinite(s.grad_norm)) {  // NaN: not measured at this step
    grad_norm_sum_ += s.grad_norm;
    ++grad_norms_;
  }
  lr_ = s.lr;
  samples_ += s.samples;
  tokens_ += s.tokens;
}

std::array<double, kFields> MetricsAggregator::local_fields(const ProcessSample& process,
                                                            const GpuSample& gpu,
                                                            const comm::OpTotals& now) const {
  std::array<double, kFields> f{};
  const double n = std::max<std::int64_t>(steps_, 1);
  f[static_cast<int>(Field::kStep)] = seconds_ / n;
  for (int i = 0; i < kPhases; ++i) f[1 + i] = phase_[static_cast<std::size_t>(i)] / n;
  f[static_cast<int>(Field::kBusy)] = (seconds_ - phase_[static_cast<int>(Phase::kComm)]) / n;
  f[static_cast<int>(Field::kCpuUtil)] = process.cpu_util;
  f[static_cast<int>(Field::kRssBytes)] = process.rss_bytes;
  f[static_cast<int>(Field::kGpuUtil)] = gpu.util_percent;
  f[static_cast<int>(Field::kGpuMemoryBytes)] = gpu.memory_used_bytes;
  f[static_cast<int>(Field::kGpuPowerWatts)] = gpu.power_watts;
  const double count = static_cast<double>(now.count - allreduce_at_start_.count);
  const double bytes = static_cast<double>(now.bytes - allreduce_at_start_.bytes);
  const double busy = now.busy_seconds - allreduce_at_start_.busy_seconds;
  f[static_cast<int>(Field::kAllreduceCount)] = count / n;
  f[static_cast<int>(Field::kAllreduceBytes)] = bytes / n;
  f[static_cast<int>(Field::kAllreduceLatency)] = count > 0 ? busy / count : 0;
  const double p = allreduce_ranks_;
  f[static_cast<int>(Field::kBusBandwidth)] =
      busy > 0 && p > 1 ? bytes / busy * 2 * (p - 1) / p : 0;
  return f;
}

Summary MetricsAggregator::summarize(const ProcessSample& process, const GpuSample& gpu,
                                     const comm::OpTotals& allreduce) {
  const auto mine = local_fields(process, gpu, allreduce);
  const int p = control_.size();
  at::Tensor in = at::from_blob(const_cast<double*>(mine.data()), {kFields}, at::kDouble).clone();
  at::Tensor all = at::empty({static_cast<std::int64_t>(p) * kFields}, at::kDouble);
  control_.all_gather(all, in);
  const double* v = all.data_ptr<double>();
  Summary s;
  s.first_step = first_step_;
  s.step = last_step_;
  s.window_steps = steps_;
  s.ranks = p;
  for (int f = 0; f < kFields; ++f) {
    FieldStats& st = s.fields[static_cast<std::size_t>(f)];
    st.min = st.max = v[f];
    double sum = 0;
    for (int r = 0; r < p; ++r) {
      const double x = v[r * kFields + f];
      sum += x;
      if (x < st.min) st.min = x, st.min_rank = r;
      if (x > st.max) st.max = x, st.max_rank = r;
    }
    st.mean = sum / p;
  }
  for (int r = 0; r < p; ++r) {
    s.rank_busy.push_back(v[r * kFields + static_cast<int>(Field::kBusy)]);
    s.rank_step.push_back(v[r * kFields + static_cast<int>(Field::kStep)]);
  }
  s.slowest_rank = s[Field::kBusy].max_rank;
  const double window_seconds = seconds_;
  if (window_seconds > 0) {
    s.samples_per_s = static_cast<double>(samples_) / window_seconds;
    s.tokens_per_s = static_cast<double>(tokens_) / window_seconds;
    s.model_flops_per_s = cost_.flops_per_sample * s.samples_per_s;
    if (cost_.peak_flops > 0) s.mfu = s.model_flops_per_s / (cost_.peak_flops * p);
  }
  const double n = std::max<std::int64_t>(steps_, 1);
  s.loss = loss_sum_ / n;
  s.last_loss = last_loss_;
  s.grad_norm = grad_norms_ > 0 ? grad_norm_sum_ / static_cast<double>(grad_norms_) : 0;
  s.lr = lr_;
  s.gpu = gpu.available;
  steps_ = 0;
  seconds_ = loss_sum_ = grad_norm_sum_ = 0;
  samples_ = tokens_ = grad_norms_ = 0;
  phase_.fill(0);
  allreduce_at_start_ = allreduce;
  return s;
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
  s.ranks = r.at("ranks").get<int>();
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
    st.min_rank = it->at("min_rank").get<int>();
    st.max_rank = it->at("max_rank").get<int>();
    COHORT_CHECK(
        st.min_rank >= 0 && st.min_rank < s.ranks && st.max_rank >= 0 && st.max_rank < s.ranks,
        IoError, "summary at step ", s.step, ": field '", it.key(), "' names a rank outside 0..",
        s.ranks - 1);
  }
  return s;
}

}  // namespace cohort::monitor
