// What differs between the LibTorch releases Cohort builds against (Debian 12: 1.13; Debian 13:
// 2.6), in one place. Nothing here is `#if`: each difference is read off LibTorch's own types, so
// a third release that keeps either form compiles unchanged.
#pragma once

#include <torch/optim/optimizer.h>

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

}  // namespace cohort::torch_compat
