// Where CUDA is built (COHORT_HAVE_NCCL): the fault table's texts are the CUDA runtime's own, so
// that LibTorch's "CUDA error: <text>" messages are read right. cudaGetErrorString needs no GPU.
#include <cuda_runtime_api.h>

#include <boost/test/unit_test.hpp>
#include <string>

#include "cohort/comm/faults.hpp"

BOOST_AUTO_TEST_SUITE(comm_faults_cuda)

BOOST_AUTO_TEST_CASE(table_texts_are_the_runtime_texts) {
  int named = 0;
  for (int code = 0; code < 1000; ++code) {
    const std::string text = cohort::comm::cuda_error_text(code);
    if (text.empty()) continue;
    ++named;
    const std::string runtime = cudaGetErrorString(static_cast<cudaError_t>(code));
    BOOST_TEST(text == runtime, "code " << code);
    // And the message LibTorch builds from it classifies as the code does.
    BOOST_TEST((cohort::comm::classify_message("CUDA error: " + runtime) ==
                cohort::comm::classify_cuda_error(code)),
               "code " << code);
  }
  BOOST_TEST(named >= 15);
}

BOOST_AUTO_TEST_SUITE_END()
