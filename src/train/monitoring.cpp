#include "cohort/train/monitoring.hpp"

#include "cohort/error.hpp"
#include "cohort/train/config.hpp"

namespace cohort::train {

monitor::Thresholds diagnosis_thresholds(const Config& c) {
  monitor::Thresholds t;
  t.data_bound_fraction = c.get_float("monitor.data_bound_fraction");
  t.gpu_util_low = c.get_float("monitor.gpu_util_low");
  t.comm_bound_fraction = c.get_float("monitor.comm_bound_fraction");
  t.straggler_margin = c.get_float("monitor.straggler_margin");
  t.straggler_windows = static_cast<int>(c.get_int("monitor.straggler_windows"));
  t.divergence_windows = static_cast<int>(c.get_int("monitor.divergence_windows"));
  t.divergence_rise = c.get_float("monitor.divergence_rise");
  COHORT_CHECK(t.straggler_windows >= 1, ConfigError, "monitor.straggler_windows must be >= 1");
  COHORT_CHECK(t.divergence_windows >= 1, ConfigError, "monitor.divergence_windows must be >= 1");
  return t;
}

monitor::MonitorOptions monitor_options(const Config& c) {
  monitor::MonitorOptions o;
  o.enabled = c.get_bool("monitor.enabled");
  o.run_dir = c.get_string("train.run_dir");
  o.log_every = c.get_int("train.log_every");
  o.summary_every = c.get_int("monitor.summary_every");
  COHORT_CHECK(o.summary_every >= 1, ConfigError, "monitor.summary_every must be >= 1");
  o.prom_file = c.get_string("monitor.prom_file");
  o.http_port = static_cast<int>(c.get_int("monitor.http_port"));
  COHORT_CHECK(o.http_port >= -1 && o.http_port <= 65535, ConfigError,
               "monitor.http_port must be -1 (off), 0 (any) or a port number");
  o.http_bind = c.get_string("monitor.http_bind");
  // One host or address: a comma would open more listeners in the exporter (civetweb's syntax).
  COHORT_CHECK(!o.http_bind.empty() &&
                   o.http_bind.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                                                 "VWXYZ0123456789.-:[]") == std::string::npos,
               ConfigError, "monitor.http_bind = '", o.http_bind,
               "' is not one host name or address");
  o.console = monitor::parse_console_mode(c.get_string("monitor.console"));
  o.cost.peak_flops = c.get_float("monitor.peak_tflops") * 1e12;
  o.thresholds = diagnosis_thresholds(c);
  return o;
}

}  // namespace cohort::train
