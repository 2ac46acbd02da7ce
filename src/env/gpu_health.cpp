#include "cohort/env/gpu_health.hpp"

#include <dlfcn.h>

#include <memory>

namespace cohort::env {
namespace {

// NVML's C API, as published in nvml.h (only what the checks call; its types are plain ints and an
// opaque device handle).
using Result = int;
using Device = void*;
constexpr Result kSuccess = 0;
constexpr int kUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatile = 0;     // NVML_VOLATILE_ECC: since the driver loaded
constexpr int kEnabled = 1;      // NVML_FEATURE_ENABLED
constexpr unsigned long long kHwSlowdown = 0x8ULL | 0x40ULL | 0x80ULL;  // HW, thermal, power brake

struct Nvml {
  Result (*init)();
  Result (*shutdown)();
  const char* (*error_string)(Result);
  Result (*count)(unsigned*);
  Result (*handle)(unsigned, Device*);
  Result (*ecc)(Device, int, int, unsigned long long*);
  Result (*pending)(Device, int*);
  Result (*throttle)(Device, unsigned long long*);
};

struct DlClose {
  void operator()(void* handle) const noexcept { dlclose(handle); }
};

template <typename F>
bool bind(void* library, const char* name, F& function) {
  function = reinterpret_cast<F>(dlsym(library, name));
  return function != nullptr;
}

bool bind_all(void* library, Nvml& n) {
  return bind(library, "nvmlInit_v2", n.init) && bind(library, "nvmlShutdown", n.shutdown) &&
         bind(library, "nvmlErrorString", n.error_string) &&
         bind(library, "nvmlDeviceGetCount_v2", n.count) &&
         bind(library, "nvmlDeviceGetHandleByIndex_v2", n.handle) &&
         bind(library, "nvmlDeviceGetTotalEccErrors", n.ecc) &&
         bind(library, "nvmlDeviceGetRetiredPagesPendingStatus", n.pending) &&
         bind(library, "nvmlDeviceGetCurrentClocksThrottleReasons", n.throttle);
}

// One device; a query the device does not support (ECC off, no page retirement) is no problem.
GpuHealth check_device(const Nvml& n, unsigned index) {
  GpuHealth gpu{static_cast<int>(index), true, ""};
  Device device = nullptr;
  if (const Result rc = n.handle(index, &device); rc != kSuccess) {
    return {gpu.index, false, std::string("not reachable: ") + n.error_string(rc)};
  }
  unsigned long long errors = 0;
  if (n.ecc(device, kUncorrected, kVolatile, &errors) == kSuccess && errors > 0) {
    gpu.healthy = false;
    gpu.problem += std::to_string(errors) + " uncorrected ECC error(s); ";
  }
  int pending = 0;
  if (n.pending(device, &pending) == kSuccess && pending == kEnabled) {
    gpu.healthy = false;
    gpu.problem += "retired pages pending (needs a reset); ";
  }
  unsigned long long reasons = 0;
  if (n.throttle(device, &reasons) == kSuccess && (reasons & kHwSlowdown) != 0) {
    gpu.healthy = false;
    gpu.problem += "hardware slowdown (thermal or power brake); ";
  }
  if (!gpu.problem.empty()) gpu.problem.resize(gpu.problem.size() - 2);
  return gpu;
}

}  // namespace

GpuHealthReport gpu_health() {
  GpuHealthReport report;
  const std::unique_ptr<void, DlClose> library(dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL));
  if (!library) {
    report.note = "NVML not found (libnvidia-ml.so.1: no NVIDIA driver on this node)";
    return report;
  }
  Nvml n{};
  if (!bind_all(library.get(), n)) {
    report.note = "NVML lacks a function the checks use (driver too old)";
    return report;
  }
  if (const Result rc = n.init(); rc != kSuccess) {
    report.note = std::string("nvmlInit failed: ") + n.error_string(rc);
    return report;
  }
  report.nvml = true;
  unsigned count = 0;
  if (const Result rc = n.count(&count); rc != kSuccess) {
    report.gpus.push_back({0, false, std::string("cannot count GPUs: ") + n.error_string(rc)});
    count = 0;
  }
  for (unsigned i = 0; i < count; ++i) report.gpus.push_back(check_device(n, i));
  n.shutdown();
  return report;
}

}  // namespace cohort::env
