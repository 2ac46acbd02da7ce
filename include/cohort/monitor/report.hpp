// `cohort report RUN_DIR`: one self-contained HTML file (inline SVG and CSS, a few lines of inline
// script, nothing fetched) with the run's loss and evaluation curves, throughput, the stacked
// step-time breakdown, communication bandwidth and latency, the per-rank comparison, an events
// timeline and the diagnosis (the rules run again over the summaries, with the run's thresholds).
//
// `cohort top RUN_DIR`: render_top() draws one frame of the live view from what has been read.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "cohort/monitor/diagnosis.hpp"
#include "cohort/monitor/eval_record.hpp"
#include "cohort/monitor/run_history.hpp"

namespace cohort::monitor {

// The findings of the rules over the run's summaries, plus the divergence events it logged.
std::vector<Finding> rediagnose(const RunHistory& history, const Thresholds& thresholds);

// `cohort report --json`: the report's path, the history's counts and the findings.
nlohmann::json report_json(const std::string& report, const RunHistory& history,
                           const std::vector<Finding>& findings);

// `evaluations`: `cohort eval --json` records to show (cohort report --eval FILE).
std::string render_report(const RunHistory& history, const Thresholds& thresholds,
                          const std::vector<EvalRecord>& evaluations = {});

// `now`: Unix time, for "updated N s ago"; `width`: terminal columns.
std::string render_top(const RunHistory& history, const Thresholds& thresholds, double now,
                       int width);

}  // namespace cohort::monitor
