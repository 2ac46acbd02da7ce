#include "cohort/bench/json.hpp"

#include <nlohmann/json.hpp>
#include <vector>

#include "cohort/bench/floor.hpp"

namespace cohort::bench {

using nlohmann::json;

namespace {

// Adds "floors" (each one's name, value, comparison, limit, met) and "floors_met" (all of them).
void add_floors(json& out, const std::vector<Floor>& floors) {
  bool all = true;
  json list = json::array();
  for (const auto& f : floors) {
    all = all && f.met();
    list.push_back({{"name", f.name},
                    {"value", f.value},
                    {"comparison", f.at_most ? "<=" : ">="},
                    {"limit", f.limit},
                    {"met", f.met()}});
  }
  out["floors"] = list;
  out["floors_met"] = all;
}

}  // namespace

json to_json(const DdpBenchResult& r, const DdpBenchOptions& options) {
  json out{{"ranks", r.ranks},
           {"parameters", r.parameters},
           {"gradient_bytes", r.gradient_bytes},
           {"buckets", r.buckets},
           {"compute_ms", r.compute_ms},
           {"ddp_ms", r.ddp_ms},
           {"overlap", options.overlap},
           {"ddp_other_overlap_ms", r.ddp_other_ms},
           {"other_overlap_floor_ratio", r.other_floor_ratio},
           {"raw_allreduce_ms", r.allreduce_ms},
           {"finish_wait_ms", r.finish_wait_ms},
           {"samples_per_s", r.samples_per_s},
           {"floor_ratio", r.floor_ratio},
           {"exposed_share", r.exposed_share},
           {"hidden_fraction", r.hidden_fraction}};
  add_floors(out, floors(r));
  return out;
}

json to_json(const CkptBenchResult& r, const CkptBenchOptions& o) {
  json out{{"ranks", r.ranks},
           {"dir", o.dir},
           {"checkpoint_bytes", r.checkpoint_bytes},
           {"raw_write_s", r.raw_write_s},
           {"sync_save_s", r.sync_save_s},
           {"write_ratio", r.write_ratio},
           {"write_ratio_best", r.write_ratio_best},
           {"raw_write_gbs", r.raw_write_gbs},
           {"save_gbs", r.save_gbs},
           {"async_stall_s", r.async_stall_s},
           {"stall_share", r.stall_share},
           {"async_background_s", r.async_background_s},
           {"step_ms", r.step_ms},
           {"step_during_save_ms", r.step_during_save_ms},
           {"load_s", r.load_s},
           {"raw_read_s", r.raw_read_s},
           {"load_ratio", r.load_ratio},
           {"restart_load_s", r.restart_load_s},
           {"restart_load_ratio", r.restart_load_ratio},
           {"load_ratio_best", r.load_ratio_best},
           {"restart_load_ratio_best", r.restart_load_ratio_best},
           {"load_rounds_s", r.load_rounds},
           {"restart_load_rounds_s", r.restart_load_rounds},
           {"raw_read_rounds_s", r.raw_read_rounds},
           {"raw_write_rounds_s", r.raw_write_rounds},
           {"sync_save_rounds_s", r.sync_save_rounds},
           {"async_stall_rounds_s", r.async_stall_rounds}};
  add_floors(out, floors(r));
  return out;
}

json to_json(const MonitorBenchResult& r, const MonitorBenchOptions& o) {
  json out{{"ranks", r.ranks},
           {"steps", o.steps},
           {"summary_every", o.summary_every},
           {"step_on_ms", r.step_on_ms},
           {"step_off_ms", r.step_off_ms},
           {"overhead", r.overhead},
           {"self_ms", r.self_ms},
           {"self_share", r.self_share},
           {"on_rounds_ms", r.on_rounds_ms},
           {"off_rounds_ms", r.off_rounds_ms}};
  add_floors(out, floors(r));
  return out;
}

json to_json(const ControlBenchResult& r, const ControlBenchOptions& o) {
  return {{"ranks", r.ranks},
          {"tensors_per_rank", o.tensors},
          {"startup_s", r.startup_s},
          {"verify_s", r.verify_s},
          {"plan_s", r.plan_s},
          {"plan_bytes", r.plan_bytes},
          {"plan_cached_s", r.plan_cached_s},
          {"manifest_bytes", r.manifest_bytes},
          {"save_s", r.save_s},
          {"summary_fields", r.summary_fields},
          {"summary_bytes", r.summary_bytes},
          {"summary_rank_bytes", r.summary_rank_bytes},
          {"summary_shared_rank_bytes", r.summary_shared_rank_bytes},
          {"summary_s", r.summary_s},
          {"summary_shared_s", r.summary_shared_s}};
}

json to_json(const ZeroStageFigures& f) {
  return {{"stage", f.stage},
          {"parameter_bytes", f.parameter_bytes},
          {"gradient_bytes", f.gradient_bytes},
          {"optimizer_bytes", f.optimizer_bytes},
          {"bucket_bytes", f.bucket_bytes},
          {"gathered_bytes", f.gathered_bytes},
          {"theory_bytes", f.theory_bytes},
          {"held_ratio", f.held_ratio},
          {"step_ms", f.step_ms},
          {"step_ratio", f.step_ratio}};
}

json to_json(const ZeroBenchResult& r, const ZeroBenchOptions& o) {
  json stages = json::array();
  for (const auto& f : r.stages) stages.push_back(to_json(f));
  return {{"ranks", r.ranks},
          {"parameters", r.parameters},
          {"batch", o.batch},
          {"overlap", o.overlap},
          {"stages", stages}};
}

json to_json(const TopologyBenchResult& r, const TopologyBenchOptions& o) {
  return {{"nodes", o.nodes},         {"tasks_per_node", o.tasks},  {"ranks", o.nodes * o.tasks},
          {"detect_ms", r.detect_ms}, {"expand_ms", r.expand_ms},   {"compress_ms", r.compress_ms},
          {"rank", r.rank},           {"node_index", r.node_index}, {"hosts", r.hosts}};
}

}  // namespace cohort::bench
