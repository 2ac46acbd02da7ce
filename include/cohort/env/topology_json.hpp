// JSON form of a Topology, shared by `cohort env --json`, metrics events and checkpoint manifests.
#pragma once

#include <nlohmann/json.hpp>

#include "cohort/env/topology.hpp"

namespace cohort::env {

nlohmann::json to_json(const Topology& topology);

}  // namespace cohort::env
