#include "cohort/monitor/sinks.hpp"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cohort/env/environment.hpp"
#include "cohort/error.hpp"
#include "cohort/io/terminal.hpp"
#include "cohort/monitor/diagnosis.hpp"

namespace cohort::monitor {

JsonlSink::JsonlSink(const std::string& path, bool append)
    : file_(path, append ? io::RunFile::Mode::kAppend : io::RunFile::Mode::kReplace) {}

JsonlSink::~JsonlSink() {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    write_pending();
  } catch (const std::exception& e) {  // a destructor does not throw: the loss is reported
    std::fprintf(stderr, "cohort: warning: %s\n", e.what());
  }
}

void JsonlSink::write_pending() {
  if (pending_.empty()) return;
  std::string text;
  text.swap(pending_);  // dropped even when the write fails: never written twice
  file_.write(text);
}

namespace {

double unix_time_ms() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::round(std::chrono::duration<double>(now).count() * 1e3) / 1e3;
}

// Shortest text that reads back as the same double (std::to_chars), or null.
void append_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buffer[32];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, v).ptr;
  out.append(buffer, end);
}

}  // namespace

void JsonlSink::write(nlohmann::json record) {
  if (!record.contains("t")) record["t"] = unix_time_ms();
  const std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::lock_guard<std::mutex> lock(mutex_);
  pending_ += line;
  pending_ += '\n';
  write_pending();
  flushed_ = std::chrono::steady_clock::now();
}

void JsonlSink::write_step(const std::vector<std::pair<const char*, double>>& fields) {
  std::lock_guard<std::mutex> lock(mutex_);
  line_.assign("{\"event\":\"step\"");
  for (const auto& [key, value] : fields) {
    line_ += ",\"";
    line_ += key;
    line_ += "\":";
    append_number(line_, value);
  }
  line_ += ",\"t\":";
  append_number(line_, unix_time_ms());
  line_ += "}\n";
  pending_ += line_;
  const auto now = std::chrono::steady_clock::now();
  if (now - flushed_ >= std::chrono::seconds(1)) {
    write_pending();
    flushed_ = now;
  }
}

namespace {

void add(std::vector<MetricSample>& out, const std::map<std::string, std::string>& labels,
         const char* name, const char* help, double value,
         std::map<std::string, std::string> extra = {}) {
  MetricSample s{name, help, labels, value};
  for (auto& [k, v] : extra) s.labels[k] = v;
  out.push_back(std::move(s));
}

std::string escape_label(const std::string& v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.9g", v);
  return buffer;
}

}  // namespace

std::vector<MetricSample> metric_samples(const Summary& s, std::int64_t total_steps,
                                         const std::map<std::string, std::string>& l,
                                         const std::vector<std::string>& active_rules,
                                         const std::vector<RankTime>& ranks) {
  std::vector<MetricSample> out;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  add(out, l, "cohort_step", "Optimizer steps done", static_cast<double>(s.step));
  add(out, l, "cohort_total_steps", "Optimizer steps planned", static_cast<double>(total_steps));
  add(out, l, "cohort_ranks", "Ranks of the run", s.ranks);
  add(out, l, "cohort_loss", "Training loss, mean over the last summary window", s.loss);
  add(out, l, "cohort_learning_rate", "Learning rate", s.lr);
  add(out, l, "cohort_grad_norm", "Global gradient L2 norm, mean over the window", s.grad_norm);
  add(out, l, "cohort_samples_per_second", "Training samples per second, all ranks",
      s.samples_per_s);
  add(out, l, "cohort_tokens_per_second", "Training tokens per second, all ranks (LMs)",
      s.tokens_per_s);
  add(out, l, "cohort_step_seconds", "Step wall time, mean over ranks", s[Field::kStep].mean);
  for (int p = 0; p < kPhases; ++p) {
    add(out, l, "cohort_step_phase_seconds", "Step time by phase, mean over ranks",
        s.fields[static_cast<std::size_t>(1 + p)].mean, {{"phase", phase_name(p)}});
  }
  for (const RankTime& r : ranks) {
    add(out, l, "cohort_rank_busy_seconds", "Step time without exposed communication, per rank",
        r.busy_s, {{"rank", std::to_string(r.rank)}});
  }
  add(out, l, "cohort_slowest_rank", "Rank with the largest busy time", s.slowest_rank);
  add(out, l, "cohort_allreduce_per_step", "Gradient all-reduces per step",
      s[Field::kAllreduceCount].mean);
  add(out, l, "cohort_allreduce_bytes_per_step", "Bytes all-reduced per step",
      s[Field::kAllreduceBytes].mean);
  add(out, l, "cohort_allreduce_latency_seconds", "Mean busy time of one all-reduce",
      s[Field::kAllreduceLatency].mean);
  add(out, l, "cohort_allreduce_bus_bandwidth_bytes_per_second",
      "All-reduce bus bandwidth (algbw * 2(n-1)/n), mean over ranks", s[Field::kBusBandwidth].mean);
  add(out, l, "cohort_cpu_utilisation", "CPU cores busy per rank, mean over ranks",
      s[Field::kCpuUtil].mean);
  add(out, l, "cohort_rss_bytes_max", "Resident memory of the largest rank",
      s[Field::kRssBytes].max);
  if (s.gpu) {
    add(out, l, "cohort_gpu_utilisation_percent", "GPU utilisation (NVML), mean over ranks",
        s[Field::kGpuUtil].mean);
    add(out, l, "cohort_gpu_memory_used_bytes_max", "GPU memory used, largest rank",
        s[Field::kGpuMemoryBytes].max);
    add(out, l, "cohort_gpu_power_watts", "GPU power draw, mean over ranks",
        s[Field::kGpuPowerWatts].mean);
  }
  if (s.model_flops_per_s > 0) {
    add(out, l, "cohort_model_flops_per_second", "Model FLOP/s, all ranks", s.model_flops_per_s);
  }
  if (s.mfu > 0) add(out, l, "cohort_mfu", "Model FLOPs utilisation (0..1)", s.mfu);
  for (const char* rule : Diagnoser::kRules) {
    bool on = false;
    for (const auto& a : active_rules) on = on || a == rule;
    add(out, l, "cohort_diagnosis", "1 while a diagnosis rule fires", on ? 1 : 0, {{"rule", rule}});
  }
  add(out, l, "cohort_last_update_timestamp_seconds", "When this file was written (Unix time)",
      std::floor(std::chrono::duration<double>(now).count()));
  return out;
}

std::string prometheus_text(const std::vector<MetricSample>& samples) {
  std::string out, previous;
  for (const auto& s : samples) {
    if (s.name != previous) {
      out += "# HELP " + s.name + " " + s.help + "\n# TYPE " + s.name + " gauge\n";
      previous = s.name;
    }
    out += s.name;
    if (!s.labels.empty()) {
      out += '{';
      bool first = true;
      for (const auto& [k, v] : s.labels) {
        out += (first ? "" : ",") + k + "=\"" + escape_label(v) + "\"";
        first = false;
      }
      out += '}';
    }
    out += ' ' + number(s.value) + '\n';
  }
  return out;
}

// Auto: a terminal gets the bar. Ranks started by mpirun always write to a pseudo-terminal, so
// there the answer comes from COHORT_STDOUT_TTY, which `cohort launch` and `cohort supervise`
// set from their own standard output; without it, plain lines.
static bool console_is_terminal(std::FILE* out) {
  const auto environment = env::Environment::from_process();
  if (const auto said = environment.get("COHORT_STDOUT_TTY")) return said->rfind('1', 0) == 0;
  if (environment.has("OMPI_COMM_WORLD_SIZE")) return false;
  return isatty(io::terminal_fd(out)) != 0;
}

ConsoleSink::ConsoleSink(std::FILE* out, ConsoleMode mode, std::int64_t total_steps,
                         std::int64_t log_every)
    : out_(out),
      bar_(mode == ConsoleMode::kBar || (mode == ConsoleMode::kAuto && console_is_terminal(out))),
      total_(total_steps),
      log_every_(log_every) {}

ConsoleSink::~ConsoleSink() {
  if (drawn_) std::fputc('\n', out_);
}

void ConsoleSink::clear() {
  if (drawn_) io::write_control(out_, "\r\033[K");  // the bar's own: past the filter
  drawn_ = false;
}

void ConsoleSink::line(const std::string& text) {
  clear();
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

void ConsoleSink::step(const StepSample& s, double samples_per_s, double data_wait) {
  step_ema_ = step_ema_ == 0 ? s.seconds : 0.9 * step_ema_ + 0.1 * s.seconds;
  if (bar_) {
    const auto now = std::chrono::steady_clock::now();  // redrawn at most 10 times a second
    if (drawn_ && s.step != total_ && now - drawn_at_ < std::chrono::milliseconds(100)) return;
    drawn_at_ = now;
    const double eta = step_ema_ * static_cast<double>(total_ - s.step);
    const int percent = total_ > 0 ? static_cast<int>(100 * s.step / total_) : 0;
    clear();
    std::fprintf(
        out_, "[%3d%%] step %lld/%lld  loss %.4f  %.0f samples/s  data %2.0f%%  ETA %lldm%02llds",
        percent, static_cast<long long>(s.step), static_cast<long long>(total_), s.loss,
        samples_per_s, 100 * data_wait, static_cast<long long>(eta) / 60,
        static_cast<long long>(eta) % 60);
    std::fflush(out_);
    drawn_ = true;
    return;
  }
  if (log_every_ <= 0 || (s.step % log_every_ != 0 && s.step != 1)) return;
  std::fprintf(out_,
               "step  %lld/%lld epoch %lld loss %.4f lr %.5f samples/s %.0f data-wait %.1f%% "
               "step-ms %.1f\n",
               static_cast<long long>(s.step), static_cast<long long>(total_),
               static_cast<long long>(s.epoch), s.loss, s.lr, samples_per_s, 100 * data_wait,
               1e3 * s.seconds);
  std::fflush(out_);
}

}  // namespace cohort::monitor
