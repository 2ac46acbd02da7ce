#include "cohort/env/system_info.hpp"

#include <dlfcn.h>
#include <limits.h>
#include <malloc.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cohort/env/environment.hpp"

// A sanitizer's allocator replaces malloc, whose mallinfo2 then reports nothing: in such a build
// (COHORT_SANITIZER address or thread) the sanitizer's own count of live bytes stands in, so the
// activation and heap figures (and the tests that check them) mean the same there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COHORT_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define COHORT_SANITIZER_ALLOCATOR 1
#endif
#endif
#ifdef COHORT_SANITIZER_ALLOCATOR
// The sanitizers' public interface (clang's <sanitizer/allocator_interface.h>, which GCC does
// not ship; libasan and libtsan export it).
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
#endif

namespace cohort::env {
namespace {

std::string real_path(const char* path) {
  std::array<char, PATH_MAX> buffer{};
  if (realpath(path, buffer.data()) == nullptr) return path;
  return buffer.data();
}

std::string vendor_of(const std::string& path, bool has_openblas_api, bool has_mkl_api) {
  if (has_openblas_api || path.find("openblas") != std::string::npos) return "openblas";
  if (has_mkl_api || path.find("mkl") != std::string::npos) return "mkl";
  if (path.find("blis") != std::string::npos) return "blis";
  if (path.find("atlas") != std::string::npos) return "atlas";
  if (path.find("/blas/") != std::string::npos) return "reference";
  return "unknown";
}

}  // namespace

BlasInfo blas_info() {
  BlasInfo info{"none", "none", ""};
  void* dgemm = dlsym(RTLD_DEFAULT, "dgemm_");
  Dl_info where{};
  if (dgemm == nullptr || dladdr(dgemm, &where) == 0 || where.dli_fname == nullptr) return info;
  info.library = real_path(where.dli_fname);
  using ConfigFn = char* (*)();
  const auto openblas_config =
      reinterpret_cast<ConfigFn>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
  const bool mkl = dlsym(RTLD_DEFAULT, "mkl_get_version_string") != nullptr;
  info.vendor = vendor_of(info.library, openblas_config != nullptr, mkl);
  if (openblas_config != nullptr) info.detail = openblas_config();
  return info;
}

nlohmann::json to_json(const BlasInfo& info) {
  return {{"vendor", info.vendor}, {"library", info.library}, {"detail", info.detail}};
}

int set_blas_threads(int threads) {
  using SetFn = void (*)(int);
  using GetFn = int (*)();
  const auto get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  const auto set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set != nullptr && get != nullptr) {
    if (!Environment::from_process().has("OPENBLAS_NUM_THREADS")) set(threads);
    return get();
  }
  return 0;
}

std::string library_of(const void* address) {
  Dl_info where{};
  if (address == nullptr || dladdr(address, &where) == 0 || where.dli_fname == nullptr) {
    return "unknown";
  }
  return real_path(where.dli_fname);
}

std::string hostname() {
  std::array<char, 256> buffer{};
  if (gethostname(buffer.data(), buffer.size() - 1) != 0) return "unknown";
  return buffer.data();
}

std::optional<std::string> executable_path() {
  std::error_code error;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error || path.empty()) return std::nullopt;
  return path.string();
}

int online_cpus() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.compare(0, 6, "VmHWM:") != 0) continue;
    const long long kib = std::atoll(line.c_str() + 6);  // "VmHWM:   123456 kB"
    return kib > 0 ? static_cast<std::int64_t>(kib) * 1024 : 0;
  }
  return 0;
}

std::int64_t heap_bytes_in_use() {
#ifdef COHORT_SANITIZER_ALLOCATOR
  return static_cast<std::int64_t>(__sanitizer_get_current_allocated_bytes());
#else
  const struct mallinfo2 info = ::mallinfo2();
  return static_cast<std::int64_t>(info.uordblks + info.hblkhd);
#endif
}

double seconds_since_process_start() {
  std::ifstream in("/proc/self/stat");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos || close + 2 > text.size()) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string skipped;
  for (int field = 3; field < 22 && fields >> skipped; ++field) {  // starttime is field 22
  }
  unsigned long long start_ticks = 0;
  if (!(fields >> start_ticks)) return 0;
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9 -
         static_cast<double>(start_ticks) / ticks;
}

}  // namespace cohort::env
