// The `cohort ckpt` records, apart from the code that reads and writes checkpoints: no LibTorch
// here, since the light `cohort` runs ckpt list, inspect and verify.
#include <nlohmann/json.hpp>

#include "cohort/ckpt/export.hpp"
#include "cohort/ckpt/inspect.hpp"

namespace cohort::ckpt {

using nlohmann::json;

json summary_json(const Manifest& m) {
  std::int64_t bytes = 0;
  for (const auto& s : m.shards) bytes += s.bytes;
  return {{"step", m.step},
          {"epoch", m.epoch},
          {"samples_seen", m.samples_seen},
          {"world_size", m.world_size},
          {"nodes", m.nodes},
          {"shards", m.shards.size()},
          {"tensors", m.tensors.size()},
          {"bytes", bytes},
          {"config_hash", m.config_hash},
          {"created", m.created},
          {"cohort_version", m.cohort_version}};
}

json to_json(const CheckpointEntry& e) {
  json row = e.readable ? summary_json(e.manifest) : json{{"step", e.step}, {"problem", e.problem}};
  row["path"] = e.path;
  row["latest"] = e.latest;
  return row;
}

json inspect_json(const Manifest& m, const std::string& step_dir) {
  json out = summary_json(m);
  out["path"] = step_dir;
  out["tensor_index"] = json::array();
  for (const auto& t : m.tensors) {
    out["tensor_index"].push_back(
        {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"slices", t.slices.size()}});
  }
  return out;
}

json verify_json(const std::string& step_dir, const std::vector<std::string>& problems) {
  return {{"path", step_dir}, {"clean", problems.empty()}, {"problems", problems}};
}

json to_json(const ExportSummary& s) {
  return {{"source", s.source},
          {"out", s.out},
          {"step", s.step},
          {"tensors", s.tensors},
          {"bytes", s.bytes}};
}

}  // namespace cohort::ckpt
