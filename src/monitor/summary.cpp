#include "cohort/monitor/summary.hpp"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include <algorithm>
#include <cmath>

#include "cohort/comm/communicator.hpp"

namespace cohort::monitor {

MetricsAggregator::MetricsAggregator(comm::Communicator& control, int allreduce_ranks,
                                     ModelCost cost, comm::Communicator* node)
    : control_(control), node_(node), allreduce_ranks_(allreduce_ranks), cost_(cost) {}

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
  f[static_cast<int>(Field::kHostLoad)] = process.host_load;
  f[static_cast<int>(Field::kHostCores)] = process.host_cores;
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

namespace {

// Mean, min and max of each field over `rows` rows of kFields; the lowest rank holds a tie.
void statistics(const double* v, int rows, Summary& s) {
  for (int f = 0; f < kFields; ++f) {
    FieldStats& st = s.fields[static_cast<std::size_t>(f)];
    st.min = st.max = v[f];
    double sum = 0;
    for (int r = 0; r < rows; ++r) {
      const double x = v[r * kFields + f];
      sum += x;
      if (x < st.min) st.min = x, st.min_rank = r;
      if (x > st.max) st.max = x, st.max_rank = r;
    }
    st.mean = sum / rows;
  }
}

// What share() broadcasts: per field mean, min, max, min_rank, max_rank; the slowest rank; flags.
constexpr int kShared = 5 * kFields + 2;

}  // namespace

std::vector<RankTime> rank_times(const Summary& s) {
  std::vector<RankTime> out;
  for (std::size_t r = 0; r < s.rank_busy.size(); ++r) {
    out.push_back(
        {static_cast<int>(r), s.rank_busy[r], r < s.rank_step.size() ? s.rank_step[r] : 0.0});
  }
  return out;
}

Summary MetricsAggregator::summarize(const ProcessSample& process, const GpuSample& gpu,
                                     const comm::OpTotals& allreduce) {
  const auto mine = local_fields(process, gpu, allreduce);
  own_busy_ = mine[static_cast<int>(Field::kBusy)];
  own_step_ = mine[static_cast<int>(Field::kStep)];
  const int p = control_.size();
  const bool root = control_.rank() == 0;
  at::Tensor in = at::from_blob(const_cast<double*>(mine.data()), {kFields}, at::kDouble).clone();
  at::Tensor all;
  if (root) all = at::empty({static_cast<std::int64_t>(p) * kFields}, at::kDouble);
  control_.gather(all, in, 0);
  Summary s;
  s.first_step = first_step_;
  s.step = last_step_;
  s.window_steps = steps_;
  s.ranks = p;
  const double* v = root ? all.data_ptr<double>() : mine.data();
  statistics(v, root ? p : 1, s);
  for (int r = 0; r < (root ? p : 1); ++r) {
    s.rank_busy.push_back(v[r * kFields + static_cast<int>(Field::kBusy)]);
    s.rank_step.push_back(v[r * kFields + static_cast<int>(Field::kStep)]);
  }
  if (!root) {  // its own figures, under its own rank
    for (auto& st : s.fields) st.min_rank = st.max_rank = control_.rank();
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

std::int64_t MetricsAggregator::shared_bytes() {
  return kShared * static_cast<std::int64_t>(sizeof(double));
}

void MetricsAggregator::share(Summary& s, std::uint32_t& flags) {
  at::Tensor packed = at::empty({kShared}, at::kDouble);
  double* x = packed.data_ptr<double>();
  for (int f = 0; f < kFields; ++f) {
    const FieldStats& st = s.fields[static_cast<std::size_t>(f)];
    x[5 * f] = st.mean, x[5 * f + 1] = st.min, x[5 * f + 2] = st.max;
    x[5 * f + 3] = st.min_rank, x[5 * f + 4] = st.max_rank;
  }
  x[5 * kFields] = s.slowest_rank;
  x[5 * kFields + 1] = flags;
  control_.broadcast(packed, 0);
  for (int f = 0; f < kFields; ++f) {
    FieldStats& st = s.fields[static_cast<std::size_t>(f)];
    st.mean = x[5 * f], st.min = x[5 * f + 1], st.max = x[5 * f + 2];
    st.min_rank = static_cast<int>(x[5 * f + 3]), st.max_rank = static_cast<int>(x[5 * f + 4]);
  }
  s.slowest_rank = static_cast<int>(x[5 * kFields]);
  flags = static_cast<std::uint32_t>(x[5 * kFields + 1]);
  if (node_ == nullptr) return;
  at::Tensor in = at::empty({3}, at::kDouble);
  double* row = in.data_ptr<double>();
  row[0] = control_.rank(), row[1] = own_busy_, row[2] = own_step_;
  at::Tensor all;
  if (node_->rank() == 0) all = at::empty({3 * node_->size()}, at::kDouble);
  node_->gather(all, in, 0);
  s.node_ranks.clear();
  if (node_->rank() != 0) return;
  const double* v = all.data_ptr<double>();
  for (int r = 0; r < node_->size(); ++r) {
    s.node_ranks.push_back({static_cast<int>(v[3 * r]), v[3 * r + 1], v[3 * r + 2]});
  }
}

}  // namespace cohort::monitor
