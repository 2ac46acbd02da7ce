// The [monitor] config section as the monitor module's options (train -> monitor: the monitor
// knows nothing of Config).
#pragma once

#include "cohort/monitor/diagnosis.hpp"
#include "cohort/monitor/monitor.hpp"

#include "cohort/settings/config.hpp"

namespace cohort::train {

monitor::Thresholds diagnosis_thresholds(const MonitorConfig& config);
// Everything but what only the trainer knows (total steps, append, model cost, device).
monitor::MonitorOptions monitor_options(const TrainConfig& config);

}  // namespace cohort::train
