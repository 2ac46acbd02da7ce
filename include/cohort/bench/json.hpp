// The `cohort bench ... --json` records of the bench module's benchmarks: each result with the
// options it reports beside its figures and, where the benchmark states floors (bench/floor.hpp),
// "floors" (each one's name, value, comparison, limit, met) and "floors_met" (all of them).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "cohort/bench/ckpt.hpp"
#include "cohort/bench/control.hpp"
#include "cohort/bench/ddp.hpp"
#include "cohort/bench/monitor.hpp"
#include "cohort/bench/topology.hpp"
#include "cohort/bench/zero.hpp"

namespace cohort::bench {

// `bench ddp`: the step times and ratios, the overlap setting, and the floors.
nlohmann::json to_json(const DdpBenchResult& result, const DdpBenchOptions& options);
// `bench ckpt`: the medians, every round's times ("*_rounds_s"), the directory, and the floors.
nlohmann::json to_json(const CkptBenchResult& result, const CkptBenchOptions& options);
// `bench monitor`: the step times on and off, steps and summary_every, and the floor.
nlohmann::json to_json(const MonitorBenchResult& result, const MonitorBenchOptions& options);
// `bench control`: the control paths' times and bytes, with the checkpoint tensors per rank.
nlohmann::json to_json(const ControlBenchResult& result, const ControlBenchOptions& options);
// One stage's row of `bench zero`'s "stages".
nlohmann::json to_json(const ZeroStageFigures& figures);
// `bench zero`: ranks, parameters, batch, overlap and "stages" (stages 0 to 3).
nlohmann::json to_json(const ZeroBenchResult& result, const ZeroBenchOptions& options);
// `bench topology`: the step's shape (nodes, tasks_per_node, ranks), the times, what was detected.
nlohmann::json to_json(const TopologyBenchResult& result, const TopologyBenchOptions& options);

}  // namespace cohort::bench
