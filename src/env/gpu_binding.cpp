#include "cohort/env/gpu_binding.hpp"

#include <cctype>

#include "cohort/error.hpp"

namespace cohort::env {
namespace {

const char* const kDeviceVariables[] = {"CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS",
                                        "SLURM_JOB_GPUS"};

// A device id is an index ("3") or a UUID-style name ("GPU-8f3a...", "MIG-...").
bool valid_device_id(const std::string& id) {
  if (id.empty()) return false;
  if (std::isdigit(static_cast<unsigned char>(id.front()))) {
    for (const char c : id) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
    return true;
  }
  return id.rfind("GPU-", 0) == 0 || id.rfind("MIG-", 0) == 0;
}

std::vector<std::string> split_ids(const std::string& text, const std::string& origin) {
  std::vector<std::string> ids;
  // Slurm writes NoDevFiles when a step has no GPUs; an empty value also means none.
  if (text.empty() || text == "NoDevFiles") return ids;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string id =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    COHORT_CHECK(valid_device_id(id), EnvironmentError, origin, "='", text,
                 "' is not a list of GPU indices or UUIDs");
    ids.push_back(std::move(id));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ids;
}

// Rule 1: the devices this process sees, and where that was read. The first variable present
// decides, even when it names none (CUDA_VISIBLE_DEVICES='' hides every device from CUDA).
void find_visible(const Environment& env, std::optional<int> cuda_count, GpuBinding& b) {
  for (const char* name : kDeviceVariables) {
    if (const auto value = env.get(name)) {
      b.visible = split_ids(*value, name);
      b.source = name;
      b.counted_from = std::string(name) + "='" + *value + "'";
      return;
    }
  }
  if (cuda_count.value_or(0) <= 0) return;
  for (int i = 0; i < *cuda_count; ++i) b.visible.push_back(std::to_string(i));
  b.source = "CUDA";
  b.counted_from = "the devices CUDA sees; no CUDA_VISIBLE_DEVICES";
}

}  // namespace

GpuBinding bind_gpu(const Environment& env, int local_rank, int local_size,
                    std::optional<int> cuda_count) {
  GpuBinding b;
  b.local_rank = local_rank;
  b.local_ranks = local_size;
  find_visible(env, cuda_count, b);
  const int count = static_cast<int>(b.visible.size());
  b.node_devices = count;
  if (count == 0) return b;
  // Rule 2: SLURM_GPUS_ON_NODE counts the step's GPUs on the node in every task's environment,
  // while a task bound by --gpus-per-task or --gpu-bind is given only its own in
  // CUDA_VISIBLE_DEVICES and SLURM_STEP_GPUS.
  const auto on_node = env.get_int("SLURM_GPUS_ON_NODE", 0, 1L << 20);
  if (on_node && *on_node > count) {
    b.device = 0;
    b.node_devices = static_cast<int>(*on_node);
    b.counted_from = "SLURM_GPUS_ON_NODE=" + std::to_string(*on_node) + ", " +
                     std::to_string(count) + " bound to each task (" + b.counted_from + ")";
    // More bound places than devices: some device is in two tasks' lists (--gpu-bind=closest
    // or single:N gives ranks of one socket the same first GPU).
    b.shared = static_cast<long>(count) * local_size > *on_node;
    return b;
  }
  if (count >= local_size) {  // rule 3: one device per local rank
    b.device = local_rank;
    return b;
  }
  // Rule 4: consecutive local ranks share a device (4 ranks on 2 GPUs: 0,0,1,1).
  const int per_device = (local_size + count - 1) / count;
  b.device = local_rank / per_device;
  b.shared = true;
  return b;
}

std::string sharing_text(const GpuBinding& b) {
  if (!b.shared) return "";
  return std::to_string(b.local_ranks) + " local ranks share " + std::to_string(b.node_devices) +
         (b.node_devices == 1 ? " GPU" : " GPUs") + " (" + b.counted_from + ")";
}

int require_own_gpu(const GpuBinding& b, const std::string& needed_by) {
  COHORT_CHECK(b.device.has_value(), EnvironmentError, needed_by, ": this rank sees no GPU (",
               b.source.empty()
                   ? "none of CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS, SLURM_JOB_GPUS is set"
                   : b.counted_from,
               ")");
  COHORT_CHECK(!b.shared, EnvironmentError, needed_by, ": ", sharing_text(b),
               ", and each rank needs a GPU of its own; start one rank per GPU (srun "
               "--ntasks-per-node=",
               b.node_devices, " with --gpus-per-node, or --gpus-per-task=1)");
  return *b.device;
}

}  // namespace cohort::env
