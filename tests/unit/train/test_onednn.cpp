// Convolution gradients as Cohort leaves LibTorch (train::guard_convolutions) equal LibTorch's own
// reference kernels (oneDNN off), over shapes of the CNN's layers and batch sizes down to one.
// On Debian 13 without the guard, oneDNN 3.7.2 misses here by O(1) (and its channels-last strided
// 1x1 backward corrupts the heap); with Debian 12's oneDNN 2.6 the guard leaves oneDNN on.
// Two suites, two CTest tests: train_onednn (the guard follows the release it finds, and the
// release and ISA rules) runs everywhere; train_onednn_gradients compares the kernels, and where
// the guard is on (or LibTorch has no oneDNN) Cohort runs the reference kernels themselves, so the
// comparison could not fail: it then skips (exit 79, tests/test_skip.hpp) instead of passing.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/max.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/sub.h>
#include <torch/csrc/autograd/autograd.h>

#include <boost/test/unit_test.hpp>

#include "cohort/env/onednn.hpp"
#include "cohort/train/torch_runtime.hpp"
#include "test_skip.hpp"

namespace {

struct ConvCase {
  std::int64_t batch, in, out, kernel, stride, size;
  bool channels_last;
};

// Largest difference of the input and weight gradients between the kernels Cohort runs and
// LibTorch's reference ones, over three backward passes (the wrong kernels missed
// intermittently).
double gradient_error(const ConvCase& c) {
  const auto format =
      c.channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  const at::Tensor x0 = at::randn({c.batch, c.in, c.size, c.size}).contiguous(format);
  const at::Tensor w0 = at::randn({c.out, c.in, c.kernel, c.kernel}).contiguous(format);
  const bool cohorts_choice = at::globalContext().userEnabledMkldnn();
  auto grads = [&](bool onednn) {
    at::globalContext().setUserEnabledMkldnn(onednn);
    const at::Tensor x = x0.clone().requires_grad_();
    const at::Tensor w = w0.clone().requires_grad_();
    const at::Tensor y = at::conv2d(x, w, {}, c.stride, c.kernel / 2);
    const at::Tensor g = at::sin(at::arange(y.numel()).reshape(y.sizes()).to(at::kFloat));
    auto out = torch::autograd::grad({y}, {x, w}, {g});
    at::globalContext().setUserEnabledMkldnn(cohorts_choice);
    return out;
  };
  const auto reference = grads(false);
  double worst = 0;
  for (int i = 0; i < 3; ++i) {
    const auto got = grads(cohorts_choice);
    for (std::size_t k = 0; k < got.size(); ++k) {
      worst = std::max(worst, got[k].sub(reference[k]).abs().max().item<double>());
    }
  }
  return worst;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(train_onednn)

// Whatever the release: the guard is on exactly where the release is known to be wrong, and
// LibTorch's switch (what `cohort env` reports) says what the guard chose.
BOOST_AUTO_TEST_CASE(guard_follows_the_release) {
  const std::string why = cohort::train::guard_convolutions();
  const auto info = cohort::env::onednn_info();
  BOOST_TEST_MESSAGE("oneDNN " << info.version << " (" << info.library << ", " << info.isa
                               << "): " << (why.empty() ? "convolutions on oneDNN" : why));
  BOOST_TEST(cohort::train::torch_runtime().onednn_convolutions == why.empty());
  BOOST_TEST(why.empty() == !cohort::env::onednn_convolutions_wrong(info));
}

BOOST_AUTO_TEST_CASE(releases_and_isa_names) {
  cohort::env::OneDnnInfo info;
  info.major = 3;
  info.minor = 7;
  BOOST_TEST(cohort::env::onednn_convolutions_wrong(info));
  info.minor = 5;
  BOOST_TEST(!cohort::env::onednn_convolutions_wrong(info));
  BOOST_TEST(!cohort::env::onednn_convolutions_wrong(cohort::env::OneDnnInfo{}));
  BOOST_TEST(cohort::env::onednn_isa_name(0x7) == "avx2");
  BOOST_TEST(cohort::env::onednn_isa_name(0xe7) == "avx512_core_bf16");
  BOOST_TEST(cohort::env::onednn_isa_name(0x12345) == "0x12345");
}

BOOST_AUTO_TEST_SUITE_END()

// A suite of its own (CTest's unit.train_onednn_gradients), as its skip makes the whole program
// exit 79.
BOOST_AUTO_TEST_SUITE(train_onednn_gradients)

BOOST_AUTO_TEST_CASE(convolution_gradients_are_right) {
  const std::string why = cohort::train::guard_convolutions();
  const auto info = cohort::env::onednn_info();
  BOOST_TEST_MESSAGE("oneDNN " << info.version << " (" << info.library << ", " << info.isa
                               << "): " << (why.empty() ? "convolutions on oneDNN" : why));
  const char* what = "the convolution gradients Cohort runs against LibTorch's reference kernels";
  if (!why.empty()) {
    cohort::test::skip(what, why +
                                 ", which are the reference: the comparison could not fail "
                                 "(unit.train_onednn checks the guard)");
    return;
  }
  if (!at::hasMKLDNN()) {
    cohort::test::skip(what,
                       "this LibTorch has no oneDNN: its reference kernels are the only ones");
    return;
  }
  // The control: without the guard LibTorch's oneDNN switch is on, so gradient_error compares
  // two different sets of kernels.
  BOOST_REQUIRE_MESSAGE(at::globalContext().userEnabledMkldnn(),
                        "LibTorch's oneDNN switch is off without the guard: the reference kernels "
                        "would be compared with themselves");
  at::set_num_threads(2);
  at::manual_seed(3);
  for (const std::int64_t batch : {1, 4, 16}) {
    for (const bool nhwc : {false, true}) {
      for (const ConvCase& c : {ConvCase{batch, 1, 8, 3, 1, 12, nhwc},
                                {batch, 4, 4, 3, 1, 8, nhwc},
                                {batch, 8, 8, 3, 1, 4, nhwc},
                                {batch, 4, 8, 3, 2, 8, nhwc},
                                {batch, 4, 8, 1, 2, 8, nhwc},
                                {batch, 8, 16, 1, 2, 12, nhwc}}) {
        const double error = gradient_error(c);
        BOOST_TEST(error < 1e-3, "conv batch " << c.batch << " " << c.in << "->" << c.out << " k"
                                               << c.kernel << " s" << c.stride << " "
                                               << (nhwc ? "nhwc" : "nchw") << ": " << error);
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
