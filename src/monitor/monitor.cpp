#include "cohort/monitor/monitor.hpp"

#include <cstring>

#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "cohort/comm/communicator.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/monitor/http_exporter.hpp"

#include "monitor/tensorboard.hpp"

namespace cohort::monitor {
namespace {

// The gradients' collectives as all-reduces: ZeRO's reduce-scatter of a bucket of B bytes and
// all-gather back into it move what one all-reduce of B moves, so together they count as one (a
// record's bytes are its input's: B for the reduce-scatter, B / ranks for the all-gather). ZeRO
// 3 gathers a bucket twice per step (before forward and before backward): its figures come out
// as 1.5 all-reduces of B, what it moves.
comm::OpTotals gradient_totals(const comm::Communicator& gradients) {
  const auto& recorder = gradients.flight_recorder();
  comm::OpTotals t = recorder.totals("all_reduce");
  const comm::OpTotals scatter = recorder.totals("reduce_scatter");
  const comm::OpTotals gather = recorder.totals("all_gather");
  t.count += (scatter.count + gather.count) / 2;
  t.bytes += scatter.bytes / 2 + gather.bytes * gradients.size() / 2;
  t.busy_seconds += scatter.busy_seconds + gather.busy_seconds;
  return t;
}

constexpr std::int64_t kHostBytes = 64;
constexpr std::chrono::seconds kTextfileInterval(2);
const char* const kPhaseKeys[kPhases] = {"data_s",      "forward_s",    "backward_s", "comm_s",
                                         "optimizer_s", "checkpoint_s", "other_s"};

std::vector<std::string> gather_hosts(comm::Communicator& control) {
  at::Tensor mine = at::zeros({kHostBytes}, at::kByte);
  ::gethostname(reinterpret_cast<char*>(mine.data_ptr<std::uint8_t>()), kHostBytes - 1);
  at::Tensor all = at::empty({control.size() * kHostBytes}, at::kByte);
  control.all_gather(all, mine);
  std::vector<std::string> hosts;
  const char* p = reinterpret_cast<const char*>(all.data_ptr<std::uint8_t>());
  for (int r = 0; r < control.size(); ++r) {
    hosts.emplace_back(p + r * kHostBytes, strnlen(p + r * kHostBytes, kHostBytes));
  }
  return hosts;
}

// The lowest rank on the same host: one color per node. Split with the world rank as key, the
// node's first rank is the session's node rank 0, the one that serves /metrics (MpiSession orders
// its node communicator by world rank too).
int node_color(const std::vector<std::string>& hosts, int rank) {
  int r = 0;
  while (hosts[static_cast<std::size_t>(r)] != hosts[static_cast<std::size_t>(rank)]) ++r;
  return r;
}

}  // namespace

struct Monitor::Http {
  std::unique_ptr<HttpExporter> exporter;
};

// Rank 0's TensorBoard scalars: every step's loss, lr, throughput and phases; each summary's
// throughput and MFU; each evaluation's metrics. Flushed at most once a second, and at the end.
struct Monitor::TensorBoard {
  TensorBoardWriter writer;
  std::chrono::steady_clock::time_point flushed{};
  std::vector<std::pair<std::string, double>> values;

  TensorBoard(const std::string& dir, std::int64_t resume_step, const std::string& run_dir)
      : writer(dir, resume_step, run_dir) {}
  void write(std::int64_t step, bool flush_now) {
    writer.scalars(step, values);
    values.clear();
    const auto now = std::chrono::steady_clock::now();
    if (flush_now || now - flushed >= std::chrono::seconds(1)) {
      writer.flush();
      flushed = now;
    }
  }
};

Monitor::Monitor(MonitorOptions options, comm::Communicator& control,
                 const comm::Communicator& gradients, int local_rank, std::FILE* console)
    : options_(std::move(options)),
      control_(control),
      gradients_(gradients),
      rank0_(control.rank() == 0),
      local0_(local_rank == 0),
      hosts_(gather_hosts(control)),
      http_(std::make_unique<Http>()) {
  labels_ = {{"job", options_.job_id.empty() ? "local" : options_.job_id},
             {"run", std::filesystem::path(options_.run_dir).filename().string()}};
  if (rank0_) {
    jsonl_ = std::make_unique<JsonlSink>(options_.run_dir + "/metrics.jsonl", options_.append);
    console_ = std::make_unique<ConsoleSink>(console, options_.console, options_.total_steps,
                                             options_.log_every);
    nlohmann::json run = {{"event", "run"},
                          {"schema", "cohort.metrics"},
                          {"version", kMetricsSchemaVersion},
                          {"ranks", control.size()},
                          {"hosts", hosts_},
                          {"total_steps", options_.total_steps},
                          {"monitor", options_.enabled},
                          {"summary_every", options_.summary_every},
                          {"job_id", options_.job_id},
                          {"restart", options_.restart_count},
                          {"first_step", options_.resume_step}};
    for (auto& [k, v] : options_.run_info.items()) run[k] = v;
    jsonl_->write(std::move(run));
    if (!options_.tensorboard_dir.empty()) {
      std::filesystem::path dir(options_.tensorboard_dir);
      if (dir.is_relative()) dir = std::filesystem::path(options_.run_dir) / dir;
      tensorboard_ =
          std::make_unique<TensorBoard>(dir.string(), options_.resume_step, options_.run_dir);
    }
    JsonlSink* sink = jsonl_.get();
    comm::set_timeout_observer([sink](const std::string& message) {
      sink->write({{"event", "watchdog"}, {"message", message}});
    });
  }
  if (!options_.enabled) return;
  // A node's endpoint shows the job's figures and its own ranks' times (share()).
  if (options_.http_port >= 0)
    node_ = control.split(node_color(hosts_, control.rank()), control.rank());
  aggregator_ =
      std::make_unique<MetricsAggregator>(control, gradients.size(), options_.cost, node_.get());
  if (rank0_) diagnoser_ = std::make_unique<Diagnoser>(options_.thresholds, hosts_);
  process_ = std::make_unique<ProcessSampler>();
  gpu_ = std::make_unique<GpuSampler>(options_.cuda_device);
  start_endpoint();
}

// The endpoint fails on one rank (a port in use), but the ranks agree before anyone goes on: a
// rank that threw alone would leave the others waiting in the next collective.
void Monitor::start_endpoint() {
  std::string error;
  if (local0_ && options_.http_port >= 0) {
    try {
      http_->exporter = std::make_unique<HttpExporter>(options_.http_bind, options_.http_port);
    } catch (const ConfigError& e) {
      error = e.what();
    }
  }
  at::Tensor failed = at::full({1}, error.empty() ? 0 : 1, at::kInt);
  control_.all_reduce(failed, {comm::ReduceOp::kMax});
  COHORT_CHECK(
      failed.item<int>() == 0, ConfigError,
      error.empty() ? "monitor.http_port: the /metrics endpoint failed on another rank" : error);
  if (http_->exporter) {
    say("monitor: serving /metrics on " + options_.http_bind + ":" +
        std::to_string(http_->exporter->port()));
  }
}

Monitor::~Monitor() {
  if (rank0_) comm::set_timeout_observer({});
}

int Monitor::http_port() const { return http_->exporter ? http_->exporter->port() : 0; }

void Monitor::say(const std::string& line) {
  if (console_) console_->line(line);
}

void Monitor::event(nlohmann::json record) {
  if (tensorboard_ && record.value("event", "") == "eval" && record.contains("step") &&
      record["step"].is_number_integer()) {
    for (const auto& [key, value] : record.items()) {
      if (value.is_number() && key != "step" && key != "t") {
        tensorboard_->values.emplace_back("eval/" + key, value.get<double>());
      }
    }
    tensorboard_->write(record["step"].get<std::int64_t>(), /*flush_now=*/true);
  }
  if (jsonl_) jsonl_->write(std::move(record));
}

void Monitor::diagnose(const Finding& f) {
  event({{"event", "diagnosis"},
         {"rule", f.rule},
         {"step", f.step},
         {"rank", f.rank},
         {"message", f.message}});
  say("diagnosis: " + f.message);
}

void Monitor::step(const StepSample& s) {
  const auto start = std::chrono::steady_clock::now();
  step_inner(s);
  own_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Monitor::step_inner(const StepSample& s) {
  ++steps_;
  samples_ += s.samples;
  seconds_ += s.seconds;
  data_seconds_ += s.phase[static_cast<int>(Phase::kData)];
  if (rank0_) {
    std::vector<std::pair<const char*, double>>& f = step_fields_;
    f.clear();
    f.emplace_back("step", static_cast<double>(s.step));
    f.emplace_back("epoch", static_cast<double>(s.epoch));
    f.emplace_back("loss", s.loss);
    f.emplace_back("lr", s.lr);
    if (options_.enabled) {
      if (std::isfinite(s.grad_norm)) f.emplace_back("grad_norm", s.grad_norm);  // if measured
      f.emplace_back("samples", static_cast<double>(s.samples));
      if (s.tokens > 0) f.emplace_back("tokens", static_cast<double>(s.tokens));
      f.emplace_back("step_s", s.seconds);
      for (int p = 0; p < kPhases; ++p) f.emplace_back(kPhaseKeys[p], s.phase[p]);
    }
    jsonl_->write_step(f);
    if (tensorboard_) {
      auto& v = tensorboard_->values;
      for (const auto& [key, value] : f) {
        if (std::strcmp(key, "step") == 0 || std::strcmp(key, "epoch") == 0) continue;
        const bool phase = std::any_of(std::begin(kPhaseKeys), std::end(kPhaseKeys),
                                       [&](const char* p) { return std::strcmp(p, key) == 0; });
        v.emplace_back(std::string(phase ? "phase/" : "train/") + key, value);
      }
      if (s.seconds > 0) v.emplace_back("train/samples_per_s", s.samples / s.seconds);
      tensorboard_->write(s.step, s.step == options_.total_steps);
    }
    console_->step(s, seconds_ > 0 ? static_cast<double>(samples_) / seconds_ : 0,
                   seconds_ > 0 ? data_seconds_ / seconds_ : 0);
  }
  if (!options_.enabled) return;
  aggregator_->add(s);
  if (options_.summary_every > 0 && s.step % options_.summary_every == 0) {
    summarize(/*final=*/s.step == options_.total_steps);
  }
}

void Monitor::finish() {
  const auto start = std::chrono::steady_clock::now();
  if (options_.enabled && aggregator_->window_steps() > 0) summarize(/*final=*/true);
  own_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Monitor::summarize(bool final) {
  const ProcessSample process = process_->sample();
  const GpuSample gpu = gpu_->sample();
  Summary summary = aggregator_->summarize(process, gpu, gradient_totals(gradients_));
  std::vector<Finding> found;
  std::uint32_t rules = 0;
  if (rank0_) {
    found = diagnoser_->observe(summary);
    rules = diagnoser_->active_flags();
  }
  if (node_) aggregator_->share(summary, rules);  // the nodes' endpoints need rank 0's figures
  // Rewritten at most every kTextfileInterval (and at the end): replacing a file costs a rename,
  // which on ext4 also writes the new file's data out at once (auto_da_alloc), and
  // node_exporter reads it every 15 s or so anyway.
  const auto now = std::chrono::steady_clock::now();
  const bool textfile =
      rank0_ && !options_.prom_file.empty() && (final || now - prom_written_ >= kTextfileInterval);
  const auto active = Diagnoser::rules_of(rules);
  if (http_->exporter) {  // this node's ranks
    http_->exporter->update(
        metric_samples(summary, options_.total_steps, labels_, active, summary.node_ranks));
  }
  if (textfile) {  // the job's: every rank
    prom_written_ = now;
    std::filesystem::path path(options_.prom_file);
    if (path.is_relative()) path = std::filesystem::path(options_.run_dir) / path;
    const auto samples =
        metric_samples(summary, options_.total_steps, labels_, active, rank_times(summary));
    // Rewritten every few seconds: atomic for scrapers, not worth an fsync each time.
    io::write_file_atomically(path.string(), prometheus_text(samples), io::Durability::kAtomic);
  }
  if (!rank0_) return;
  jsonl_->write(to_json(summary));
  if (tensorboard_) {
    auto& v = tensorboard_->values;
    v.emplace_back("summary/samples_per_s", summary.samples_per_s);
    if (summary.tokens_per_s > 0) v.emplace_back("summary/tokens_per_s", summary.tokens_per_s);
    if (summary.model_flops_per_s > 0) {
      v.emplace_back("summary/model_tflops", summary.model_flops_per_s / 1e12);
    }
    if (summary.mfu > 0) v.emplace_back("summary/mfu", summary.mfu);
    tensorboard_->write(summary.step, /*flush_now=*/true);
  }
  for (const auto& f : found) diagnose(f);
}

}  // namespace cohort::monitor
