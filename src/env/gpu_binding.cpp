#include "cohort/env/gpu_binding.hpp"

#include <cctype>

#include "cohort/error.hpp"

namespace cohort::env {
namespace {

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

}  // namespace

GpuBinding bind_gpu(const Environment& env, int local_rank, int local_size) {
  GpuBinding binding;
  for (const char* source : {"CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
    if (const auto value = env.get(source)) {
      binding.visible = split_ids(*value, source);
      break;
    }
  }
  const int count = static_cast<int>(binding.visible.size());
  if (count == 0) return binding;
  if (count >= local_size) {
    binding.device = local_rank;  // one device per local rank
  } else {
    // Fewer devices than ranks: consecutive local ranks share a device (4 ranks on 2 GPUs:
    // 0,0,1,1).
    const int per_device = (local_size + count - 1) / count;
    binding.device = local_rank / per_device;
  }
  return binding;
}

}  // namespace cohort::env
