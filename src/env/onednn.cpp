#include "cohort/env/onednn.hpp"

#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <utility>

#include "cohort/env/environment.hpp"
#include "cohort/env/system_info.hpp"

namespace cohort::env {
namespace {

// The parts of oneDNN's C API used here (dnnl_common_types.h, dnnl_types.h, dnnl.h), which have
// kept these layouts and values since oneDNN 2.0.
struct DnnlVersion {
  int major;
  int minor;
  int patch;
  const char* hash;
  unsigned cpu_runtime;
  unsigned gpu_runtime;
};
using VersionFn = const DnnlVersion* (*)();
using SetIsaFn = int (*)(unsigned);
using GetIsaFn = unsigned (*)();
constexpr unsigned kIsaAvx2 = 0x7;
constexpr int kDnnlSuccess = 0;

const DnnlVersion* loaded_version() {
  const auto version = reinterpret_cast<VersionFn>(dlsym(RTLD_DEFAULT, "dnnl_version"));
  return version == nullptr ? nullptr : version();
}

// Releases whose AVX-512 convolution backward is known wrong (see the header).
bool avx512_convolutions_wrong(const DnnlVersion& v) { return v.major == 3 && v.minor == 7; }

std::string& cap_reason() {
  static std::string reason;
  return reason;
}

}  // namespace

std::string onednn_isa_name(unsigned isa) {
  static constexpr std::array<std::pair<unsigned, const char*>, 14> kNames{{
      {0x0, "default"},
      {0x1, "sse41"},
      {0x3, "avx"},
      {0x7, "avx2"},
      {0xf, "avx2_vnni"},
      {0x1f, "avx2_vnni_2"},
      {0x27, "avx512_core"},
      {0x67, "avx512_core_vnni"},
      {0xe7, "avx512_core_bf16"},
      {0x1ef, "avx10_1_512"},
      {0xfef, "avx10_1_512_amx"},
      {0x1fef, "avx10_1_512_amx_fp16"},
      {0x3ef, "avx10_2_512"},
      {0x7ef, "avx10_2_512_amx_2"},
  }};
  for (const auto& [value, name] : kNames) {
    if (value == isa) return name;
  }
  std::array<char, 16> hex{};
  std::snprintf(hex.data(), hex.size(), "0x%x", isa);
  return hex.data();
}

std::string cap_onednn_isa() {
  if (!cap_reason().empty()) return cap_reason();  // capped already: a second call is harmless
  const DnnlVersion* v = loaded_version();
  const auto set_isa = reinterpret_cast<SetIsaFn>(dlsym(RTLD_DEFAULT, "dnnl_set_max_cpu_isa"));
  if (v == nullptr || set_isa == nullptr || !avx512_convolutions_wrong(*v)) return "";
  const Environment process = Environment::from_process();
  if (process.has("ONEDNN_MAX_CPU_ISA") || process.has("DNNL_MAX_CPU_ISA")) return "";
  // The CPU is asked directly: querying oneDNN's effective ISA would fix it for the process.
  if (__builtin_cpu_supports("avx512f") == 0) return "";
  // Fails once oneDNN has created a primitive or been asked its ISA: then it is too late.
  if (set_isa(kIsaAvx2) != kDnnlSuccess) return "";
  cap_reason() = "capped at avx2: oneDNN " + std::to_string(v->major) + "." +
                 std::to_string(v->minor) + "'s AVX-512 convolution backward is wrong";
  return cap_reason();
}

OneDnnInfo onednn_info() {
  OneDnnInfo info;
  const DnnlVersion* v = loaded_version();
  if (v == nullptr) return info;
  info.version =
      std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  info.library = library_of(dlsym(RTLD_DEFAULT, "dnnl_version"));
  const auto get_isa =
      reinterpret_cast<GetIsaFn>(dlsym(RTLD_DEFAULT, "dnnl_get_effective_cpu_isa"));
  if (get_isa != nullptr) info.isa = onednn_isa_name(get_isa());
  info.cap = cap_reason();
  return info;
}

}  // namespace cohort::env
