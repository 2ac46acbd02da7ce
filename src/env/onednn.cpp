#include "cohort/env/onednn.hpp"

#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>

#include "cohort/env/system_info.hpp"

namespace cohort::env {
namespace {

// The parts of oneDNN's C API used here (dnnl_common_types.h, dnnl.h), which have kept these
// layouts and values since oneDNN 2.0.
struct DnnlVersion {
  int major;
  int minor;
  int patch;
  const char* hash;
  unsigned cpu_runtime;
  unsigned gpu_runtime;
};
using VersionFn = const DnnlVersion* (*)();
using GetIsaFn = unsigned (*)();

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

OneDnnInfo onednn_info() {
  OneDnnInfo info;
  void* symbol = dlsym(RTLD_DEFAULT, "dnnl_version");
  const DnnlVersion* v = symbol == nullptr ? nullptr : reinterpret_cast<VersionFn>(symbol)();
  if (v == nullptr) return info;
  info.major = v->major;
  info.minor = v->minor;
  info.patch = v->patch;
  info.version =
      std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  info.library = library_of(symbol);
  const auto get_isa =
      reinterpret_cast<GetIsaFn>(dlsym(RTLD_DEFAULT, "dnnl_get_effective_cpu_isa"));
  if (get_isa != nullptr) info.isa = onednn_isa_name(get_isa());
  return info;
}

bool onednn_convolutions_wrong(const OneDnnInfo& info) {
  return info.major == 3 && info.minor == 7;
}

nlohmann::json to_json(const OneDnnInfo& info, bool convolutions) {
  return {{"version", info.version},
          {"library", info.library},
          {"isa", info.isa},
          {"convolutions", convolutions ? "on" : "off"},
          {"known_wrong", onednn_convolutions_wrong(info)}};
}

}  // namespace cohort::env
