// The records the train module's commands print with --json: `cohort eval` (read back by
// `cohort report --eval`, monitor/eval_record.hpp), `cohort predict` and `cohort train`.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "cohort/train/checkpoint_eval.hpp"
#include "cohort/train/predict.hpp"
#include "cohort/train/trainer.hpp"

namespace cohort::train {

// `cohort eval --json`: the "cohort-eval" record, format_version 1 (+ "classes", "confusion").
nlohmann::json to_json(const CheckpointEvalReport& report);
// `cohort predict --json`: the summary, with samples_per_s.
nlohmann::json to_json(const PredictSummary& summary);
// `cohort train --json`: the run's summary and, when it ended with an evaluation, "eval".
nlohmann::json to_json(const TrainSummary& summary);

}  // namespace cohort::train
