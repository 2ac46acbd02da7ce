// Monitor: what the trainer hands every step and every event to; it feeds the sinks.
//
// Protocol (every rank, in the same order, from the training thread):
//  - the constructor is collective (it gathers the ranks' host names, and with
//    monitor.http_port splits a communicator per node); rank 0 opens
//    metrics.jsonl and writes a "run" record (schema version, ranks, hosts, Slurm job);
//  - step(sample) after every optimizer step: rank 0 writes a "step" record and the console
//    line; every monitor.summary_every steps all ranks take part in one gather to rank 0
//    (MetricsAggregator::summarize), rank 0 runs the diagnosis rules (a new finding is a
//    "diagnosis" record and a console line) and writes a "summary" record and (at most every
//    2 s, and at the end) the Prometheus textfile; with monitor.http_port, rank 0's figures are
//    then shared (MetricsAggregator::share) and each node's local rank 0 updates its /metrics
//    endpoint with them and its node's ranks' times;
//  - event(record) from rank 0's view (checkpoints, signals, requeue, evaluation...): the record
//    goes to metrics.jsonl as it is; other ranks' calls do nothing;
//  - finish() is collective: a last summary of the steps since the previous one.
// With monitor.enabled off only the plain step records (step, epoch, loss, lr), the events and
// the console lines remain: no grad norm, no summaries, no textfile, no endpoint.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cohort/monitor/diagnosis.hpp"
#include "cohort/monitor/sinks.hpp"
#include "cohort/monitor/step_metrics.hpp"
#include "cohort/monitor/summary.hpp"

namespace cohort::comm {
class Communicator;
}

namespace cohort::monitor {

struct MonitorOptions {
  bool enabled = true;
  std::string run_dir;
  bool append = false;  // a resumed run: metrics.jsonl continues
  std::int64_t total_steps = 0;
  std::int64_t log_every = 10;  // plain console lines
  std::int64_t summary_every = 50;
  std::string prom_file = "metrics.prom";  // relative to run_dir unless absolute; "" off
  int http_port = -1;                      // < 0 off; 0 any free port
  std::string http_bind = "127.0.0.1";
  ConsoleMode console = ConsoleMode::kAuto;
  Thresholds thresholds;
  ModelCost cost;
  int cuda_device = -1;     // the GPU this rank uses, for NVML (-1: none)
  std::string job_id;       // the Slurm job ("": not in one), for labels and the "run" record
  int restart_count = 0;    // SLURM_RESTART_COUNT of this run
  nlohmann::json run_info;  // extra fields of the "run" record
  // TensorBoard event files (rank 0; relative to run_dir unless absolute; "" off), and the step
  // this run resumed from (events of later steps from an earlier start are cut; 0 when fresh).
  std::string tensorboard_dir;
  std::int64_t resume_step = 0;
};

class Monitor {
 public:
  // `control`: CPU communicator over all ranks; `gradients`: the communicator whose all-reduce
  // totals are reported. Both outlive the monitor.
  Monitor(MonitorOptions options, comm::Communicator& control, const comm::Communicator& gradients,
          int local_rank, std::FILE* console);  // collective
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  bool enabled() const { return options_.enabled; }
  // Collective every summary_every steps.
  void step(const StepSample& sample);
  void event(nlohmann::json record);
  // A console line on rank 0 (clears the progress bar first).
  void say(const std::string& line);
  // A finding found outside the summaries (a non-finite loss): logged and said on rank 0.
  void diagnose(const Finding& finding);
  void finish();          // collective
  int http_port() const;  // 0 when there is no endpoint on this rank
  // Wall time spent in step() and finish() so far: what the monitor itself costs this rank.
  double own_seconds() const { return own_seconds_; }
  const std::vector<std::string>& hosts() const { return hosts_; }

 private:
  void step_inner(const StepSample& sample);
  void summarize(bool final = false);
  void start_endpoint();  // collective

  MonitorOptions options_;
  comm::Communicator& control_;
  const comm::Communicator& gradients_;
  bool rank0_, local0_;
  std::vector<std::string> hosts_;
  std::unique_ptr<JsonlSink> jsonl_;
  std::unique_ptr<ConsoleSink> console_;
  std::unique_ptr<comm::Communicator> node_;  // this node's ranks, with monitor.http_port
  std::unique_ptr<MetricsAggregator> aggregator_;
  std::unique_ptr<Diagnoser> diagnoser_;  // rank 0
  std::unique_ptr<ProcessSampler> process_;
  std::unique_ptr<GpuSampler> gpu_;
  struct Http;
  std::unique_ptr<Http> http_;
  struct TensorBoard;  // rank 0 with monitor.tensorboard_dir
  std::unique_ptr<TensorBoard> tensorboard_;
  std::map<std::string, std::string> labels_;
  std::vector<std::pair<const char*, double>> step_fields_;  // reused: no allocation per step
  std::chrono::steady_clock::time_point prom_written_{};
  std::int64_t steps_ = 0, samples_ = 0;
  double own_seconds_ = 0;
  double seconds_ = 0, data_seconds_ = 0;
};

}  // namespace cohort::monitor
