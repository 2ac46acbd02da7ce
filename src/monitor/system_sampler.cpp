#include "cohort/monitor/system_sampler.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cohort/env/environment.hpp"

namespace cohort::monitor {
namespace {

double cpu_seconds() {
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) is in parentheses and may hold spaces: count after the last ')'.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double rss_bytes() {
  std::ifstream in("/proc/self/statm");
  unsigned long long size = 0, resident = 0;
  in >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// The few NVML entry points used, declared here: nvml.h is not needed to build.
using NvmlReturn = int;  // nvmlReturn_t: 0 is NVML_SUCCESS
using NvmlDevice = void*;
struct NvmlUtilization {
  unsigned int gpu, memory;
};
struct NvmlMemory {
  unsigned long long total, free, used;
};

}  // namespace

ProcessSampler::ProcessSampler()
    : last_cpu_seconds_(cpu_seconds()), last_(std::chrono::steady_clock::now()) {}

ProcessSample ProcessSampler::sample() {
  const auto now = std::chrono::steady_clock::now();
  const double cpu = cpu_seconds();
  const double wall = std::chrono::duration<double>(now - last_).count();
  ProcessSample s;
  s.cpu_util = wall > 0 ? (cpu - last_cpu_seconds_) / wall : 0;
  s.rss_bytes = rss_bytes();
  std::ifstream loadavg("/proc/loadavg");
  if (!(loadavg >> s.host_load)) s.host_load = 0;
  s.host_cores = static_cast<double>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  last_cpu_seconds_ = cpu;
  last_ = now;
  return s;
}

int nvml_index(int cuda_device, const std::string& visible) {
  if (visible.empty()) return cuda_device;
  std::vector<std::string> entries;
  std::stringstream list(visible);
  for (std::string e; std::getline(list, e, ',');) entries.push_back(e);
  if (cuda_device < 0 || cuda_device >= static_cast<int>(entries.size())) return cuda_device;
  const std::string& e = entries[static_cast<std::size_t>(cuda_device)];
  char* end = nullptr;
  const long n = std::strtol(e.c_str(), &end, 10);
  return (!e.empty() && *end == '\0') ? static_cast<int>(n) : -1;
}

struct GpuSampler::Impl {
  void* library = nullptr;
  NvmlDevice device = nullptr;
  std::string why_not;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*power)(NvmlDevice, unsigned int*) = nullptr;

  template <typename F>
  bool load(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(library, name));
    if (f == nullptr) why_not = std::string("NVML has no ") + name;
    return f != nullptr;
  }
  void open(int cuda_device);
};

void GpuSampler::Impl::open(int cuda_device) {
  if (cuda_device < 0) {
    why_not = "no GPU in use";
    return;
  }
  library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    why_not = "libnvidia-ml.so.1 not found (no NVIDIA driver)";
    return;
  }
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*by_index)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*by_uuid)(const char*, NvmlDevice*) = nullptr;
  if (!load(init, "nvmlInit_v2") || !load(shutdown, "nvmlShutdown") ||
      !load(by_index, "nvmlDeviceGetHandleByIndex_v2") ||
      !load(by_uuid, "nvmlDeviceGetHandleByUUID") ||
      !load(utilization, "nvmlDeviceGetUtilizationRates") ||
      !load(memory, "nvmlDeviceGetMemoryInfo") || !load(power, "nvmlDeviceGetPowerUsage")) {
    return;
  }
  if (init() != 0) {
    why_not = "nvmlInit failed";
    shutdown = nullptr;
    return;
  }
  const std::string visible =
      env::Environment::from_process().get("CUDA_VISIBLE_DEVICES").value_or("");
  const int index = nvml_index(cuda_device, visible);
  NvmlReturn got = 1;
  if (index >= 0) {
    got = by_index(static_cast<unsigned int>(index), &device);
  } else {
    std::stringstream list(visible);
    std::string uuid;
    for (int i = 0; i <= cuda_device; ++i) std::getline(list, uuid, ',');
    got = by_uuid(uuid.c_str(), &device);
  }
  if (got != 0) {
    device = nullptr;
    why_not = "NVML has no handle for CUDA device " + std::to_string(cuda_device);
  }
}

GpuSampler::GpuSampler(int cuda_device) : impl_(std::make_unique<Impl>()) {
  impl_->open(cuda_device);
}

GpuSampler::~GpuSampler() {
  if (impl_->shutdown != nullptr) impl_->shutdown();
  if (impl_->library != nullptr) dlclose(impl_->library);
}

bool GpuSampler::available() const { return impl_->device != nullptr; }
const std::string& GpuSampler::why_not() const { return impl_->why_not; }

GpuSample GpuSampler::sample() {
  GpuSample s;
  if (!available()) return s;
  NvmlUtilization u{};
  NvmlMemory m{};
  unsigned int milliwatts = 0;
  s.available = impl_->utilization(impl_->device, &u) == 0;
  if (s.available) s.util_percent = u.gpu;
  if (impl_->memory(impl_->device, &m) == 0) {
    s.memory_used_bytes = static_cast<double>(m.used);
    s.memory_total_bytes = static_cast<double>(m.total);
  }
  if (impl_->power(impl_->device, &milliwatts) == 0) s.power_watts = milliwatts / 1000.0;
  return s;
}

}  // namespace cohort::monitor
