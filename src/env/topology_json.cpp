#include "cohort/env/topology_json.hpp"

#include <algorithm>

namespace cohort::env {
namespace {

template <typename T>
nlohmann::json optional_json(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json to_json(const Topology& t) {
  nlohmann::json j;
  j["launcher"] = to_string(t.launcher);
  j["rank"] = t.rank;
  j["world_size"] = t.world_size;
  j["local_rank"] = t.local_rank;
  j["local_size"] = t.local_size;
  j["node_index"] = t.node_index;
  j["node_count"] = t.node_count;
  j["hosts"] = t.hosts;
  j["host"] = t.host;
  j["cpus_per_task"] = t.cpus_per_task;
  j["gpus"] = t.gpus;
  j["cuda_device"] = optional_json(t.cuda_device);
  j["gpu_shared"] = t.gpu_shared;
  j["master_addr"] = optional_json(t.master_addr);
  j["master_port"] = optional_json(t.master_port);
  if (t.slurm) {
    j["slurm"] = {{"job_id", t.slurm->job_id},
                  {"step_id", optional_json(t.slurm->step_id)},
                  {"array_job_id", optional_json(t.slurm->array_job_id)},
                  {"array_task_id", optional_json(t.slurm->array_task_id)},
                  {"restart_count", t.slurm->restart_count},
                  {"job_nodelist", t.slurm->job_nodelist}};
  } else {
    j["slurm"] = nullptr;
  }
  return j;
}

nlohmann::json to_json(const ParallelLayout& layout, const Topology& topology) {
  using nlohmann::json;
  json ranks = json::array();
  for (int r = 0; r < layout.world(); ++r) {
    const auto c = layout.coords(r);
    const int node = r / std::max(1, topology.local_size);  // block distribution, as launchers do
    json entry = {{"rank", r},
                  {"data", c.data},
                  {"stage", c.stage},
                  {"tensor", c.tensor},
                  {"node", node},
                  {"data_group", layout.data_group(r)},
                  {"pipeline_group", layout.pipeline_group(r)},
                  {"tensor_group", layout.tensor_group(r)}};
    if (node < static_cast<int>(topology.hosts.size())) entry["host"] = topology.hosts[node];
    ranks.push_back(entry);
  }
  return {{"world", layout.world()},
          {"data", layout.data()},
          {"pipeline_stages", layout.stages()},
          {"tensor", layout.tensor()},
          {"ranks", ranks}};
}

}  // namespace cohort::env
