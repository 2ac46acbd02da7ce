#include "cohort/train/monitoring.hpp"

#include "cohort/env/environment.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/slurm/job.hpp"

namespace cohort::train {
namespace {

monitor::ConsoleMode console_mode(ConsoleMode mode) {
  switch (mode) {
    case ConsoleMode::kBar:
      return monitor::ConsoleMode::kBar;
    case ConsoleMode::kLines:
      return monitor::ConsoleMode::kLines;
    case ConsoleMode::kAuto:
      break;
  }
  return monitor::ConsoleMode::kAuto;
}

}  // namespace

// The settings' ranges (windows >= 1, a port or -1, one host) were checked at load.
monitor::Thresholds diagnosis_thresholds(const MonitorConfig& c) {
  monitor::Thresholds t;
  t.data_bound_fraction = c.data_bound_fraction;
  t.gpu_util_low = c.gpu_util_low;
  t.comm_bound_fraction = c.comm_bound_fraction;
  t.straggler_margin = c.straggler_margin;
  t.straggler_windows = static_cast<int>(c.straggler_windows);
  t.divergence_windows = static_cast<int>(c.divergence_windows);
  t.divergence_rise = c.divergence_rise;
  t.cpu_contention = c.cpu_contention;
  return t;
}

monitor::MonitorOptions monitor_options(const TrainConfig& c) {
  monitor::MonitorOptions o;
  o.enabled = c.monitor.enabled;
  o.run_dir = c.train.run_dir;
  o.log_every = c.train.log_every;
  o.summary_every = c.monitor.summary_every;
  o.prom_file = c.monitor.prom_file;
  o.tensorboard_dir = c.monitor.tensorboard_dir;
  o.http_port = static_cast<int>(c.monitor.http_port);
  o.http_bind = c.monitor.http_bind;
  o.console = console_mode(c.monitor.console);
  o.cost.peak_flops = c.monitor.peak_tflops * 1e12;
  o.thresholds = diagnosis_thresholds(c.monitor);
  const auto job = slurm::current_job(env::Environment::from_process());
  o.job_id = job.job_id;
  o.restart_count = job.restart_count;
  return o;
}

}  // namespace cohort::train
