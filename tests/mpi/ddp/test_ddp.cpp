// DDP equivalence: N ranks at batch b train to the same parameters as one process at batch N*b
// with the same seed. Every rank also trains the single-process reference itself (no
// communication), so the comparison is local.
#include <torch/torch.h>

#include <boost/test/unit_test.hpp>

#include "cohort/comm/factory.hpp"
#include "cohort/ddp/distributed_data_parallel.hpp"
#include "cohort/error.hpp"
#include "mpi_fixture.hpp"

using cohort::ddp::Compression;
using cohort::ddp::DdpOptions;
using cohort::ddp::DistributedDataParallel;

namespace {

struct MlpImpl : torch::nn::Module {
  MlpImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(144, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 16));
    fc3 = register_module("fc3", torch::nn::Linear(16, 4));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return fc3(torch::relu(fc2(torch::relu(fc1(x.flatten(1))))));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};
TORCH_MODULE(Mlp);

struct CnnImpl : torch::nn::Module {
  CnnImpl() {
    c1 = register_module("c1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3)));
    c2 = register_module("c2", torch::nn::Conv2d(torch::nn::Conv2dOptions(4, 8, 3).stride(2)));
    fc = register_module("fc", torch::nn::Linear(8 * 4 * 4, 4));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = torch::relu(c2(torch::relu(c1(x.view({-1, 1, 12, 12})))));
    return fc(h.flatten(1));
  }
  torch::nn::Conv2d c1{nullptr}, c2{nullptr};
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Cnn);

constexpr int kSteps = 20;
constexpr int64_t kBatch = 4;  // per rank

// The step's full batch (all ranks' slices), the same on every rank.
std::pair<torch::Tensor, torch::Tensor> full_batch(int step, int64_t rows) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1000 + step);
  torch::Tensor x = torch::randn({rows, 144}, gen);
  torch::Tensor y = torch::randint(0, 4, {rows}, gen, torch::kLong);
  return {x, y};
}

template <typename Model>
std::vector<torch::Tensor> train(Model model, bool distributed, const DdpOptions& options,
                                 int accumulate) {
  auto& session = cohort::test::session();
  auto comm = cohort::comm::make_communicator(session, cohort::comm::Backend::kMpi);
  const int ranks = comm->size();
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  std::unique_ptr<DistributedDataParallel> ddp;
  if (distributed) ddp = std::make_unique<DistributedDataParallel>(*model, *comm, options);
  const int64_t per_micro = distributed ? kBatch : kBatch * ranks;
  for (int step = 0; step < kSteps; ++step) {
    auto [x, y] = full_batch(step, kBatch * ranks * accumulate);
    cohort::ddp::zero_grad_in_place(model->parameters());
    for (int micro = 0; micro < accumulate; ++micro) {
      // Micro-batch `micro` of the full batch; with DDP this rank's slice of it.
      const int64_t base = micro * kBatch * ranks + (distributed ? comm->rank() * kBatch : 0);
      auto xb = x.narrow(0, base, per_micro);
      auto yb = y.narrow(0, base, per_micro);
      if (ddp) ddp->begin_step();
      auto loss = torch::nn::functional::cross_entropy(model->forward(xb), yb) / accumulate;
      if (ddp && micro + 1 < accumulate) {
        auto guard = ddp->no_sync();
        loss.backward();
      } else {
        loss.backward();
        if (ddp) ddp->finish_step();
      }
    }
    sgd.step();
  }
  std::vector<torch::Tensor> out;
  for (const auto& p : model->parameters()) out.push_back(p.detach().clone());
  return out;
}

template <typename Model>
double max_difference(const DdpOptions& options, int accumulate = 1) {
  torch::manual_seed(7);
  Model reference_model;
  torch::manual_seed(7 + cohort::test::session().rank());  // DDP must broadcast rank 0's init
  Model ddp_model;
  const std::vector<torch::Tensor> want = train(reference_model, false, options, accumulate);
  const std::vector<torch::Tensor> got = train(ddp_model, true, options, accumulate);
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, (want[i] - got[i]).abs().max().template item<double>());
  return worst;
}

DdpOptions with_buckets(std::size_t bytes) {
  DdpOptions o;
  o.bucket_bytes = bytes;
  o.first_bucket_bytes = bytes;
  return o;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ddp_equivalence)

BOOST_AUTO_TEST_CASE(mlp_default_buckets) { BOOST_TEST(max_difference<Mlp>(DdpOptions{}) < 1e-5); }
BOOST_AUTO_TEST_CASE(mlp_tiny_buckets) { BOOST_TEST(max_difference<Mlp>(with_buckets(64)) < 1e-5); }
BOOST_AUTO_TEST_CASE(mlp_one_bucket) {
  BOOST_TEST(max_difference<Mlp>(with_buckets(1u << 30)) < 1e-5);
}
BOOST_AUTO_TEST_CASE(mlp_accumulation_through_no_sync) {
  BOOST_TEST(max_difference<Mlp>(with_buckets(256), 3) < 1e-5);
}
BOOST_AUTO_TEST_CASE(mlp_without_overlap) {
  DdpOptions o = with_buckets(256);
  o.overlap = false;
  BOOST_TEST(max_difference<Mlp>(o, 2) < 1e-5);
}
BOOST_AUTO_TEST_CASE(cnn_tiny_buckets) { BOOST_TEST(max_difference<Cnn>(with_buckets(64)) < 1e-5); }
BOOST_AUTO_TEST_CASE(cnn_one_bucket) {
  BOOST_TEST(max_difference<Cnn>(with_buckets(1u << 30)) < 1e-5);
}

// Compressed wires round every gradient: bf16 keeps 8 bits of mantissa, fp16 11. After 20 SGD
// steps with momentum 0.9 the largest parameter difference measured 0.018 (bf16) and under 1e-2
// (fp16); the documented bounds are 5e-2 and 1e-2 (docs/ddp.md).
BOOST_AUTO_TEST_CASE(mlp_bf16_compression) {
  DdpOptions o = with_buckets(512);
  o.compression = Compression::kBf16;
  const double diff = max_difference<Mlp>(o);
  BOOST_TEST_MESSAGE("bf16 compression: max parameter difference " << diff);
  BOOST_TEST(diff < 5e-2);
  BOOST_TEST(diff > 0.0);  // the wire really was compressed
}
BOOST_AUTO_TEST_CASE(cnn_fp16_compression) {
  DdpOptions o = with_buckets(512);
  o.compression = Compression::kFp16;
  BOOST_TEST(max_difference<Cnn>(o) < 1e-2);
}

BOOST_AUTO_TEST_CASE(buckets_are_launched_during_backward) {
  auto comm = cohort::comm::make_communicator(cohort::test::session(), cohort::comm::Backend::kMpi);
  Mlp model;
  DistributedDataParallel ddp(*model, *comm, with_buckets(64));
  BOOST_TEST(ddp.buckets().size() >= 4u);
  const void* slot = model->fc3->weight.grad().data_ptr();
  ddp.begin_step();
  model->forward(torch::randn({kBatch, 144})).sum().backward();
  ddp.finish_step();
  // Every bucket was started by a hook during backward, before finish_step.
  BOOST_TEST(ddp.last_step().buckets_launched_in_backward ==
             static_cast<int>(ddp.buckets().size()));
  // Autograd accumulated into the bucket slot itself: no copy, no new tensor.
  BOOST_TEST(model->fc3->weight.grad().data_ptr() == slot);
  torch::optim::SGD sgd(model->parameters(), 0.1);
  cohort::ddp::zero_grad_in_place(sgd.parameters());  // keeps the bucket-backed gradients
  BOOST_TEST(model->fc3->weight.grad().data_ptr() == slot);
  BOOST_TEST(model->fc3->weight.grad().abs().sum().item<float>() == 0.0f);
}

BOOST_AUTO_TEST_CASE(unused_parameter_is_named_unless_allowed) {
  struct TwoHeads : torch::nn::Module {
    TwoHeads() {
      used = register_module("used", torch::nn::Linear(3, 2));
      unused = register_module("unused", torch::nn::Linear(3, 2));
      frozen = register_module("frozen", torch::nn::Linear(3, 2));
      for (auto& p : frozen->parameters()) p.set_requires_grad(false);
    }
    torch::nn::Linear used{nullptr}, unused{nullptr}, frozen{nullptr};
  };
  auto comm = cohort::comm::make_communicator(cohort::test::session(), cohort::comm::Backend::kMpi);
  TwoHeads model;
  {
    DistributedDataParallel ddp(model, *comm, with_buckets(1u << 20));
    ddp.begin_step();
    model.used->forward(torch::ones({1, 3})).sum().backward();
    BOOST_CHECK_EXCEPTION(ddp.finish_step(), cohort::ConfigError, [](const cohort::ConfigError& e) {
      const std::string m = e.what();
      return m.find("'unused.weight'") != std::string::npos &&
             m.find("frozen") == std::string::npos;
    });
  }
  DdpOptions allow = with_buckets(1u << 20);
  allow.find_unused_parameters = true;
  DistributedDataParallel ddp(model, *comm, allow);
  ddp.begin_step();
  model.used->forward(torch::ones({1, 3})).sum().backward();
  ddp.finish_step();
  BOOST_TEST(model.unused->weight.grad().abs().sum().item<float>() == 0.0f);
  BOOST_TEST(!model.frozen->weight.grad().defined());
}

BOOST_AUTO_TEST_SUITE_END()
