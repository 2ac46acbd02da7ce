// oneDNN, the library LibTorch's CPU convolutions run on: linked into libtorch_cpu on Debian 12
// (LibTorch 1.13), the shared libdnnl.so.3 (3.7.2) on Debian 13 (LibTorch 2.6). It is found at
// run time through its C API symbols, so that Cohort needs neither its headers nor a link to it.
//
// Protocol: cap_onednn_isa() runs first thing in the process (cohort's main; the Trainer calls it
// again for programs of their own, a no-op once capped), before any convolution creates a oneDNN
// primitive — oneDNN fixes its instruction set at the first one.
// onednn_info() may be called any time after, for `cohort env`.
#pragma once

#include <string>

namespace cohort::env {

struct OneDnnInfo {
  std::string version;  // "3.7.2", or "" when no oneDNN C API is visible in the process
  std::string library;  // the file that holds it (libdnnl.so.3, or libtorch_cpu.so), or ""
  std::string isa;      // the instruction set it dispatches to: "avx2", "avx512_core", ...
  std::string cap;      // why Cohort capped that instruction set, or "" when it did not
};

// Caps oneDNN at AVX2 where the loaded release is one whose AVX-512 convolution kernels compute
// wrong input gradients (3.7.x: seen with Debian 13's LibTorch 2.6 on AMD EPYC, NCHW 3x3
// convolutions' backward off by O(1), channels-last strided 1x1 backward corrupting the heap;
// AVX2 kernels of the same release are right, and about 10-15% slower; docs/building.md). A
// ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA set by the user wins. Returns the reason, or "".
std::string cap_onednn_isa();

OneDnnInfo onednn_info();

// The name of a dnnl_cpu_isa_t value ("avx512_core_bf16"), or its number in hex.
std::string onednn_isa_name(unsigned isa);

}  // namespace cohort::env
