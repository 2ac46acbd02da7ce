// oneDNN, the library LibTorch's CPU convolutions run on: linked into libtorch_cpu on Debian 12
// (LibTorch 1.13, oneDNN 2.6), the shared libdnnl.so.3 on Debian 13 (LibTorch 2.6, oneDNN 3.7.2).
// Found at run time through its C API symbols, so that Cohort needs neither its headers nor a link
// to it; train::guard_convolutions() acts on what this finds.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace cohort::env {

struct OneDnnInfo {
  int major = 0, minor = 0, patch = 0;  // 0.0.0 when no oneDNN C API is visible in the process
  std::string version;                  // "3.7.2", or ""
  std::string library;                  // the file that holds it (libdnnl.so.3, libtorch_cpu.so)
  std::string isa;                      // the instruction set it dispatches to: "avx512_core", ...
};

OneDnnInfo onednn_info();

// Whether this release's convolution backward is known to be wrong as LibTorch calls it: 3.7.x
// (Debian 13's LibTorch 2.6 links 3.7.2, built for 3.5): with its AVX2 and AVX-512 kernels, input
// and weight gradients off by O(1) for small shapes (3x3 stride 1 NCHW, 1x1 stride 2 NHWC, ...) and
// a channels-last strided 1x1 backward that corrupts the heap; its SSE4.1/AVX kernels were right.
// Reproduced with Debian's Python torch 2.6 alone (docs/building.md).
bool onednn_convolutions_wrong(const OneDnnInfo& info);

// `cohort env --json`'s "onednn"; `convolutions`: LibTorch's oneDNN path is on (TorchRuntime).
nlohmann::json to_json(const OneDnnInfo& info, bool convolutions);

// The name of a dnnl_cpu_isa_t value ("avx512_core_bf16"), or its number in hex.
std::string onednn_isa_name(unsigned isa);

}  // namespace cohort::env
