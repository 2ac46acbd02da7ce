// What differs between the LibTorch releases Cohort builds against (Debian 12: 1.13; Debian 13:
// 2.6), in one place. Where LibTorch's own types tell the difference it is read off them (a third
// release that keeps either form compiles unchanged); where a function was renamed, the one
// `#if` on TORCH_VERSION_MAJOR is here and nowhere else.
#pragma once

#include <ATen/autocast_mode.h>
#include <c10/core/Allocator.h>
#include <torch/optim/optimizer.h>
#include <torch/version.h>

#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

namespace cohort::torch_compat {

// The key an optimizer files a parameter's state under (Optimizer::state()): the text of the
// parameter's TensorImpl address up to 1.13, the address itself from 2.0.
using OptimStateKey =
    std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;

template <typename Key = OptimStateKey>
Key optim_state_key(const at::Tensor& param) {
  void* impl = param.unsafeGetTensorImpl();
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;  // what c10::guts::to_string wrote in 1.13
    text << impl;
    return text.str();
  } else {
    return impl;
  }
}

// Autocast per device type: 2.x takes the device type (is_autocast_enabled(kCPU), ...); 1.13
// had one function per device (is_cpu_enabled, set_autocast_cpu_dtype; is_enabled for CUDA), which
// 2.x keeps only as deprecated wrappers that warn on every call.
inline bool autocast_enabled(at::DeviceType device) {
#if TORCH_VERSION_MAJOR >= 2
  return at::autocast::is_autocast_enabled(device);
#else
  return device == at::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

inline void set_autocast(at::DeviceType device, bool enabled, at::ScalarType dtype) {
#if TORCH_VERSION_MAJOR >= 2
  at::autocast::set_autocast_dtype(device, dtype);
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == at::kCUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

inline void set_autocast_enabled(at::DeviceType device, bool enabled) {
#if TORCH_VERSION_MAJOR >= 2
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == at::kCUDA) {
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

// A c10::Allocator written once: subclasses implement make(). 1.13 declares allocate() const;
// from 2.3 it is not, and copy_data() is a pure virtual of its own.
class AllocatorBase : public c10::Allocator {
 public:
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  c10::DataPtr allocate(size_t n) override { return make(n); }
  void copy_data(void* dest, const void* src, size_t count) const override {
    std::memcpy(dest, src, count);
  }
#else
  c10::DataPtr allocate(size_t n) const override { return make(n); }
#endif

 protected:
  virtual c10::DataPtr make(size_t n) const = 0;
};

}  // namespace cohort::torch_compat
