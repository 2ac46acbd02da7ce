// The [monitor] config section as the monitor module's options (train -> monitor: the monitor
// knows nothing of Config).
#pragma once

#include "cohort/monitor/diagnosis.hpp"
#include "cohort/monitor/monitor.hpp"

namespace cohort::train {

class Config;

monitor::Thresholds diagnosis_thresholds(const Config& config);
// Everything but what only the trainer knows (total steps, append, model cost, device).
monitor::MonitorOptions monitor_options(const Config& config);

}  // namespace cohort::train
