// The oneDNN instruction-set cap (env/onednn.hpp), checked by what it is for: with the cap in
// place, oneDNN's convolution gradients equal LibTorch's own (oneDNN off) kernels'. Without it,
// Debian 13's oneDNN 3.7.2 misses here by O(1) on AVX-512 machines (and its channels-last strided
// 1x1 backward corrupts the heap). This suite must run in its
// own process (as ctest runs it): the cap only takes before the process's first convolution.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/max.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/sub.h>
#include <torch/csrc/autograd/autograd.h>

#include <boost/test/unit_test.hpp>

#include "cohort/env/environment.hpp"
#include "cohort/env/onednn.hpp"

namespace {

struct ConvCase {
  std::int64_t in, out, kernel, stride, size;
  bool channels_last;
};

// Largest difference of d(loss)/d(input) between oneDNN's kernels and LibTorch's reference ones,
// over `repeats` backward passes (the wrong kernels missed intermittently, thread-dependently).
double input_grad_error(const ConvCase& c, int repeats) {
  const auto format =
      c.channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  const at::Tensor x0 = at::randn({16, c.in, c.size, c.size}).contiguous(format);
  const at::Tensor w = at::randn({c.out, c.in, c.kernel, c.kernel}).contiguous(format);
  auto grad_x = [&](bool onednn) {
    at::globalContext().setUserEnabledMkldnn(onednn);
    const at::Tensor x = x0.clone().requires_grad_();
    const at::Tensor y = at::conv2d(x, w, {}, c.stride, c.kernel / 2);
    const at::Tensor g = at::ones_like(y);
    return torch::autograd::grad({y}, {x}, {g})[0];
  };
  const at::Tensor reference = grad_x(false);
  double worst = 0;
  for (int i = 0; i < repeats; ++i) {
    worst = std::max(worst, grad_x(true).sub(reference).abs().max().item<double>());
  }
  at::globalContext().setUserEnabledMkldnn(true);
  return worst;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(env_onednn)

BOOST_AUTO_TEST_CASE(cap_comes_first_and_convolution_gradients_are_right) {
  const std::string cap = cohort::env::cap_onednn_isa();  // before any convolution
  const auto info = cohort::env::onednn_info();
  BOOST_TEST_MESSAGE("oneDNN " << info.version << " (" << info.library << "): " << info.isa
                               << (cap.empty() ? "" : ", " + cap));
  BOOST_TEST(info.cap == cap);
  const bool user_isa = cohort::env::Environment::from_process().has("ONEDNN_MAX_CPU_ISA") ||
                        cohort::env::Environment::from_process().has("DNNL_MAX_CPU_ISA");
  if (info.version.rfind("3.7.", 0) == 0 && !user_isa) {
    BOOST_TEST(info.isa.rfind("avx512", 0) != 0, "oneDNN 3.7 left on " << info.isa);
  }
  at::set_num_threads(2);
  at::manual_seed(3);
  for (const ConvCase& c : {ConvCase{1, 8, 3, 1, 12, false}, ConvCase{8, 8, 3, 1, 12, false},
                            ConvCase{1, 8, 3, 1, 12, true}, ConvCase{8, 16, 3, 2, 12, false},
                            ConvCase{8, 16, 1, 2, 12, true}}) {
    const double error = input_grad_error(c, 10);
    BOOST_TEST_MESSAGE("conv " << c.in << "->" << c.out << " k" << c.kernel << " s" << c.stride
                               << (c.channels_last ? " nhwc" : " nchw") << ": " << error);
    BOOST_TEST(error < 1e-4);
  }
}

BOOST_AUTO_TEST_CASE(isa_names) {
  BOOST_TEST(cohort::env::onednn_isa_name(0x7) == "avx2");
  BOOST_TEST(cohort::env::onednn_isa_name(0xe7) == "avx512_core_bf16");
  BOOST_TEST(cohort::env::onednn_isa_name(0x12345) == "0x12345");
}

BOOST_AUTO_TEST_SUITE_END()
