// The exit-code table of CUDA and NCCL failures (comm/faults.hpp): only faults another node or
// another start could cure are requeued (77) or blamed on the node (78); programming and
// configuration errors end the job with 1 or 2, whatever library reported them.
#include <boost/test/unit_test.hpp>
#include <optional>

#include "cohort/comm/faults.hpp"

using cohort::ExitCode;
using cohort::comm::classify_cuda_error;
using cohort::comm::classify_nccl_result;
using cohort::comm::exit_code_of;
using cohort::comm::FaultClass;

BOOST_AUTO_TEST_SUITE(comm_faults)

BOOST_AUTO_TEST_CASE(nccl_results) {
  struct Row {
    int code;
    const char* name;
    ExitCode expected;
  };
  const Row rows[] = {
      {1, "ncclUnhandledCudaError", ExitCode::kNodeFault},
      {2, "ncclSystemError", ExitCode::kPeerLost},
      {3, "ncclInternalError (NCCL's bug or a memory corruption)", ExitCode::kInternal},
      {4, "ncclInvalidArgument", ExitCode::kInternal},
      {5, "ncclInvalidUsage", ExitCode::kInternal},
      {6, "ncclRemoteError", ExitCode::kPeerLost},
      {7, "ncclInProgress (not a result Cohort waits for)", ExitCode::kInternal},
      {4711, "an unknown result", ExitCode::kInternal},
  };
  for (const Row& row : rows) {
    BOOST_TEST(static_cast<int>(exit_code_of(classify_nccl_result(row.code))) ==
                   static_cast<int>(row.expected),
               row.name);
  }
}

BOOST_AUTO_TEST_CASE(cuda_errors) {
  struct Row {
    int code;
    const char* name;
    ExitCode expected;
  };
  const Row rows[] = {
      {1, "cudaErrorInvalidValue", ExitCode::kInternal},
      {2, "cudaErrorMemoryAllocation", ExitCode::kUsage},
      {101, "cudaErrorInvalidDevice (invalid device ordinal)", ExitCode::kUsage},
      {700, "cudaErrorIllegalAddress", ExitCode::kInternal},
      {710, "cudaErrorAssert", ExitCode::kInternal},
      {98, "cudaErrorInvalidDeviceFunction", ExitCode::kInternal},
      {400, "cudaErrorInvalidResourceHandle", ExitCode::kInternal},
      {100, "cudaErrorNoDevice", ExitCode::kNodeFault},
      {35, "cudaErrorInsufficientDriver (the toolkit newer than the driver)", ExitCode::kUsage},
      {214, "cudaErrorECCUncorrectable", ExitCode::kNodeFault},
      {220, "cudaErrorNvlinkUncorrectable", ExitCode::kNodeFault},
      {714, "cudaErrorHardwareStackError (a kernel's stack overflow)", ExitCode::kInternal},
      {719, "cudaErrorLaunchFailure (a kernel's invalid access)", ExitCode::kInternal},
      {803, "cudaErrorSystemDriverMismatch", ExitCode::kUsage},
      {999, "cudaErrorUnknown", ExitCode::kInternal},
  };
  for (const Row& row : rows) {
    BOOST_TEST(static_cast<int>(exit_code_of(classify_cuda_error(row.code))) ==
                   static_cast<int>(row.expected),
               row.name);
  }
}

// LibTorch reports CUDA failures as c10::Error text: "CUDA error: " and the runtime's message.
BOOST_AUTO_TEST_CASE(libtorch_messages) {
  struct Row {
    const char* what;
    std::optional<FaultClass> expected;
  };
  const Row rows[] = {
      {"CUDA error: uncorrectable ECC error encountered\nCUDA kernel errors might be ...",
       FaultClass::kNode},
      {"CUDA error: unspecified launch failure", FaultClass::kProgramming},
      {"CUDA error: no CUDA-capable device is detected", FaultClass::kNode},
      {"CUDA error: invalid device ordinal", FaultClass::kConfiguration},
      {"CUDA error: out of memory", FaultClass::kConfiguration},
      {"CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.11 GiB total capacity)",
       FaultClass::kConfiguration},
      {"CUDA error: an illegal memory access was encountered", FaultClass::kProgramming},
      {"CUDA error: device-side assert triggered", FaultClass::kProgramming},
      {"CUDA error: something no table names", FaultClass::kProgramming},
      {"CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, ...)`",
       FaultClass::kNode},
      {"CUDA error: CUBLAS_STATUS_INVALID_VALUE when calling `cublasSgemm( handle, ...)`",
       FaultClass::kProgramming},
      {"cuDNN error: CUDNN_STATUS_INTERNAL_ERROR", FaultClass::kNode},
      {"cuDNN error: CUDNN_STATUS_BAD_PARAM", FaultClass::kProgramming},
      {"CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
       FaultClass::kConfiguration},
      {"CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
       FaultClass::kConfiguration},
      {"mat1 and mat2 shapes cannot be multiplied (4x3 and 4x3)", std::nullopt},
  };
  for (const Row& row : rows) {
    const auto got = cohort::comm::classify_message(row.what);
    BOOST_TEST((got == row.expected), row.what);
  }
}

// ncclUnhandledCudaError takes the class of the CUDA failure NCCL names in its last error.
BOOST_AUTO_TEST_CASE(nccl_unhandled_cuda_error_by_its_cuda_failure) {
  BOOST_TEST(
      (classify_nccl_result(1, "Cuda failure 2 'out of memory'") == FaultClass::kConfiguration));
  BOOST_TEST((classify_nccl_result(1, "Cuda failure 'uncorrectable ECC error encountered'") ==
              FaultClass::kNode));
  BOOST_TEST((classify_nccl_result(1, "") == FaultClass::kNode));
  BOOST_TEST((classify_nccl_result(5, "Cuda failure 2 'out of memory'") ==
              FaultClass::kProgramming));  // only an unhandled CUDA error reads the text
}

// Two ranks of a node on one GPU: NCCL's invalid usage with its own words (init.cc's WARN, what
// ncclGetLastError returns) is the job's binding, with advice; any other invalid usage a bug.
BOOST_AUTO_TEST_CASE(nccl_duplicate_gpu_is_configuration) {
  const std::string duplicate =
      "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000";
  BOOST_TEST((classify_nccl_result(5, duplicate) == FaultClass::kConfiguration));
  BOOST_TEST(static_cast<int>(exit_code_of(classify_nccl_result(5, duplicate))) == 2);
  BOOST_TEST((classify_nccl_result(5, "Invalid config blocking attribute value 2") ==
              FaultClass::kProgramming));
  BOOST_TEST((classify_nccl_result(4, duplicate) == FaultClass::kProgramming));  // not usage
  BOOST_TEST(cohort::comm::nccl_advice(duplicate).find("--gpus-per-task") != std::string::npos);
  BOOST_TEST(cohort::comm::nccl_advice("Cuda failure 2 'out of memory'").empty());
}

// The thrown error carries the class's exit code, so that main and the supervisor see it.
BOOST_AUTO_TEST_CASE(thrown_errors_carry_the_class_exit_code) {
  for (const FaultClass fault : {FaultClass::kProgramming, FaultClass::kConfiguration,
                                 FaultClass::kPeer, FaultClass::kNode}) {
    try {
      cohort::comm::throw_fault(fault, "x");
      BOOST_FAIL("throw_fault returned");
    } catch (const cohort::Error& e) {
      BOOST_TEST(static_cast<int>(e.exit_code()) == static_cast<int>(exit_code_of(fault)));
    }
  }
  BOOST_CHECK_THROW(cohort::comm::throw_fault(FaultClass::kConfiguration, "x"),
                    cohort::ConfigError);
  BOOST_CHECK_THROW(cohort::comm::throw_fault(FaultClass::kNode, "x"), cohort::DeviceError);
}

BOOST_AUTO_TEST_SUITE_END()
