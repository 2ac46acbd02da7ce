// The NCCL backend from a CPU machine's point of view: asking for it gives a clear ConfigError
// (not compiled in, or no CUDA device), never a crash. On a GPU machine the all-reduce runs.
#include <ATen/ATen.h>

#include <boost/test/unit_test.hpp>

#include "cohort/comm/factory.hpp"
#include "cohort/error.hpp"
#include "mpi_fixture.hpp"

using cohort::comm::Backend;

BOOST_AUTO_TEST_SUITE(comm_nccl)

BOOST_AUTO_TEST_CASE(nccl_backend_or_a_clear_reason) {
  BOOST_TEST((cohort::comm::backend_for(c10::Device(c10::kCUDA, 0)) == Backend::kNccl));
  BOOST_TEST((cohort::comm::backend_for(c10::Device(c10::kCPU)) == Backend::kMpi));
  std::unique_ptr<cohort::comm::Communicator> comm;
  try {
    comm = cohort::comm::make_communicator(cohort::test::session(), Backend::kNccl);
  } catch (const cohort::ConfigError& e) {
    const std::string why = e.what();
    BOOST_TEST_MESSAGE("SKIPPED the NCCL all-reduce: " << why);
    BOOST_TEST((why.find("not compiled") != std::string::npos ||
                why.find("CUDA device") != std::string::npos));
    BOOST_TEST(cohort::comm::backend_compiled(Backend::kNccl) ==
               (why.find("not compiled") == std::string::npos));
    return;
  }
  if (!at::hasCUDA()) {
    BOOST_TEST_MESSAGE(
        "SKIPPED the NCCL all-reduce: this LibTorch has no CUDA (build against a CUDA LibTorch)");
    return;
  }
  // A GPU is present: a real all-reduce on this rank's device.
  at::Tensor t = at::ones({1 << 20}, at::TensorOptions().device(c10::kCUDA));
  comm->all_reduce(t);
  BOOST_TEST(t.sum().item<double>() == double(comm->size()) * (1 << 20));
}

BOOST_AUTO_TEST_SUITE_END()
