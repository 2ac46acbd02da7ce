// Cross-rank summaries: every monitor.summary_every steps each rank reduces its window of steps to
// a few numbers (means per step), and rank 0 gets everyone's: the mean, min and max across ranks,
// which rank had each extreme, and every rank's busy and step time.
//
// Protocol (every rank, at the same steps):
//  - add() after every step;
//  - summarize() is collective: one gather of kFields doubles per rank to rank 0 (O(R) bytes
//    there, O(1) on every other rank; an all-gather would send all R rows to every rank, O(R^2)
//    in all). It resets the window. Rank 0's Summary is complete; another rank's holds its own
//    window (steps, loss, lr, throughput) and, as statistics, only its own figures;
//  - share() is collective too, for runs whose nodes serve /metrics: rank 0's statistics and
//    flags (the diagnosis rules firing) to every rank, a fixed number of bytes, and each node's
//    ranks' busy and step times to the node's first rank (Summary::node_ranks).
//
// A slow rank does not show in the step time (every rank waits for it in the all-reduce) but in
// the busy time, the step without the exposed communication: the straggler has the largest busy
// time while the others' exposed communication grows by the same amount.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "cohort/comm/flight_recorder.hpp"
#include "cohort/monitor/step_metrics.hpp"
#include "cohort/monitor/system_sampler.hpp"

namespace cohort::comm {
class Communicator;
}

namespace cohort::monitor {

// What each rank contributes, per step of the window unless said otherwise.
enum class Field : int {
  kStep,  // step wall time (s); phases follow in Phase order
  kData,
  kForward,
  kBackward,
  kComm,
  kOptimizer,
  kCheckpoint,
  kOther,
  kBusy,     // step - comm: the rank's own work
  kCpuUtil,  // cores busy over the window
  kRssBytes,
  kGpuUtil,  // percent (0 without NVML)
  kGpuMemoryBytes,
  kGpuPowerWatts,
  kAllreduceCount,    // all-reduces per step
  kAllreduceBytes,    // bytes all-reduced per step
  kAllreduceLatency,  // mean busy time of one all-reduce (s)
  kBusBandwidth,      // bytes/s, NCCL's bus bandwidth: algbw * 2 (n - 1) / n
  kHostLoad,          // the rank's host: load average over the last minute
  kHostCores,         // the rank's host: online CPUs
};
constexpr int kFields = 20;
const char* field_name(Field field);  // "step_s", "data_s", ..., "busbw_bytes_per_s"

struct FieldStats {
  double mean = 0, min = 0, max = 0;
  int min_rank = 0, max_rank = 0;
};

struct RankTime {
  int rank = 0;
  double busy_s = 0, step_s = 0;
};

struct Summary {
  std::int64_t first_step = 0, step = 0;  // the window: steps first_step..step
  std::int64_t window_steps = 0;
  int ranks = 1;
  std::array<FieldStats, kFields> fields{};
  std::vector<double> rank_busy, rank_step;    // rank 0: every rank's busy and step time (s)
  std::vector<RankTime> node_ranks;            // after share(), on a node's first rank: its ranks
  int slowest_rank = 0;                        // largest busy time
  double samples_per_s = 0, tokens_per_s = 0;  // all ranks, over the window's step time
  double loss = 0;                             // mean over the window
  double last_loss = 0;
  double lr = 0;
  double grad_norm = 0;          // mean over the window
  double model_flops_per_s = 0;  // 0 when the model has no FLOP count
  double mfu = 0;                // 0 without monitor.peak_tflops
  bool gpu = false;              // NVML figures present

  const FieldStats& operator[](Field f) const { return fields[static_cast<int>(f)]; }
};

// rank_busy and rank_step as RankTime, rank by rank.
std::vector<RankTime> rank_times(const Summary& summary);

nlohmann::json to_json(const Summary& summary);
Summary summary_from_json(const nlohmann::json& record);  // throws on a malformed record

// Per-step cost of the model, for FLOPs and MFU (zeros: unknown).
struct ModelCost {
  double flops_per_sample = 0;  // forward + backward
  double peak_flops = 0;        // per rank (monitor.peak_tflops * 1e12)
};

class MetricsAggregator {
 public:
  // `control`: a CPU (MPI) communicator over all ranks; `allreduce_ranks`: ranks of the gradient
  // communicator (for the bus bandwidth); `node`: a CPU communicator over this node's ranks, for
  // share() (nullptr: share() is not called).
  MetricsAggregator(comm::Communicator& control, int allreduce_ranks, ModelCost cost,
                    comm::Communicator* node = nullptr);

  void add(const StepSample& sample);
  std::int64_t window_steps() const { return steps_; }
  // Collective. `allreduce`: the gradient communicator's all-reduce totals now.
  Summary summarize(const ProcessSample& process, const GpuSample& gpu,
                    const comm::OpTotals& allreduce);
  // Collective over the control and node communicators (see the protocol). `flags` is rank 0's
  // on return everywhere. Bytes each rank other than 0 receives: shared_bytes().
  void share(Summary& summary, std::uint32_t& flags);
  static std::int64_t shared_bytes();

 private:
  std::array<double, kFields> local_fields(const ProcessSample& process, const GpuSample& gpu,
                                           const comm::OpTotals& allreduce) const;

  comm::Communicator& control_;
  comm::Communicator* node_;
  int allreduce_ranks_;
  ModelCost cost_;
  std::int64_t steps_ = 0, first_step_ = 0, last_step_ = 0;
  double seconds_ = 0, loss_sum_ = 0, grad_norm_sum_ = 0, last_loss_ = 0, lr_ = 0;
  std::int64_t samples_ = 0, tokens_ = 0, grad_norms_ = 0;
  std::array<double, kPhases> phase_{};
  double own_busy_ = 0, own_step_ = 0;  // this rank's, at the last summarize()
  comm::OpTotals allreduce_at_start_;
};

}  // namespace cohort::monitor
