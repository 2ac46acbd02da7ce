#include "cohort/train/rank_device.hpp"

#include <string>

#include "cohort/error.hpp"

namespace cohort::train {
namespace {

constexpr const char* kNccl = "parallel.backend = nccl";

// "local rank 1 of 4, CUDA_VISIBLE_DEVICES='0,1,2,3'": where the rank's ordinal came from.
std::string binding_origin(const env::GpuBinding& b) {
  return "local rank " + std::to_string(b.local_rank) + " of " + std::to_string(b.local_ranks) +
         ", " + b.counted_from;
}

// parallel.devices under NCCL: one CUDA device this process sees, the rank's own. Blocks spread
// over several GPUs of one rank would put gradients on devices that DDP's buckets (one device
// each) and the rank's NCCL communicator (its GPU only) do not take.
std::vector<c10::Device> check_configured(const std::vector<c10::Device>& configured, int ordinal,
                                          int cuda_devices, const env::GpuBinding& b) {
  COHORT_CHECK(configured.size() == 1, ConfigError, "parallel.devices lists ", configured.size(),
               " devices, and ", kNccl,
               " trains each rank on one GPU, its communicator's (DDP's gradient buckets and "
               "NCCL take tensors on that device only): list one, or leave it empty, and spread "
               "the model over ranks with parallel.pipeline_stages");
  std::vector<c10::Device> devices;
  for (const c10::Device& d : configured) {
    COHORT_CHECK(d.is_cuda(), ConfigError, "parallel.devices: ", d.str(), " with ", kNccl,
                 ", which moves CUDA tensors only; list CUDA devices (or use parallel.backend = "
                 "mpi)");
    const int index = d.has_index() ? d.index() : ordinal;  // `cuda`: the rank's own
    COHORT_CHECK(index < cuda_devices, ConfigError, "parallel.devices: ", d.str(),
                 " is not a device of this rank, which sees ", cuda_devices);
    devices.emplace_back(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index));
  }
  const int first = devices.front().index();
  COHORT_CHECK(first == ordinal, ConfigError, "parallel.devices is cuda:", first,
               ", but this rank's GPU is cuda:", ordinal, " (", binding_origin(b), ") and ", kNccl,
               " makes its communicator there: give each task its own GPU (srun "
               "--gpus-per-task=1) and list cuda:0, or leave parallel.devices empty");
  return devices;
}

}  // namespace

RankDevice choose_rank_device(GradBackend backend, const std::vector<c10::Device>& configured,
                              const env::GpuBinding& binding, int cuda_devices) {
  RankDevice r;
  r.devices = configured;
  r.configured = !configured.empty();
  if (backend != GradBackend::kNccl) return r;
  COHORT_CHECK(cuda_devices > 0, ConfigError, kNccl,
               " puts the model on this rank's GPU, and LibTorch sees no CUDA device (a CPU-only "
               "LibTorch such as Debian's, or no GPU or driver here; ",
               binding.source.empty() ? "no CUDA_VISIBLE_DEVICES" : binding.counted_from, ")");
  const int ordinal = env::require_own_gpu(binding, kNccl);
  COHORT_CHECK(ordinal < cuda_devices, ConfigError, kNccl, ": this rank's GPU is ordinal ", ordinal,
               " (", binding_origin(binding), "), and LibTorch sees only ", cuda_devices,
               " CUDA devices");
  r.cuda = ordinal;
  if (r.configured) {
    r.devices = check_configured(configured, ordinal, cuda_devices, binding);
  } else {
    r.devices = {c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(ordinal))};
  }
  return r;
}

}  // namespace cohort::train
