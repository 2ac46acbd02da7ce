// JSON form of a Topology, shared by `cohort env --json`, metrics events and checkpoint manifests;
// and of a ParallelLayout placed on a Topology's nodes (`cohort env --parallel ... --json`).
#pragma once

#include <nlohmann/json.hpp>

#include "cohort/env/parallel_layout.hpp"
#include "cohort/env/topology.hpp"

namespace cohort::env {

nlohmann::json to_json(const Topology& topology);

// `cohort env --parallel --json`: world, the factors, "ranks" (coordinates, groups, node, host).
nlohmann::json to_json(const ParallelLayout& layout, const Topology& topology);

}  // namespace cohort::env
