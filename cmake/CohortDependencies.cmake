# Finds every dependency. A missing one stops configure and names the Debian package that provides it
# (scripts/install-deps installs them all).

macro(cohort_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR "Cohort needs ${what}: install the Debian package '${package}' "
                        "(or run scripts/install-deps)")
  endif()
endmacro()

# Open MPI 4.1
find_package(MPI COMPONENTS C)
cohort_require(MPI_C_FOUND "MPI (Open MPI)" "libopenmpi-dev")

# Parallel HDF5 built against Open MPI (Debian has no h5pc++, so only the C component).
set(HDF5_PREFER_PARALLEL TRUE)
find_package(HDF5 COMPONENTS C)
cohort_require(HDF5_FOUND "HDF5" "libhdf5-openmpi-dev")
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR "Cohort needs the parallel (Open MPI) HDF5, found a serial one: install the Debian "
                      "package 'libhdf5-openmpi-dev'")
endif()

# LibTorch: 1.13 on Debian 12, 2.6 on Debian 13 (CPU builds), a CUDA build from Python's wheel on
# a GPU machine (scripts/gpu-check).
# Protobuf before LibTorch: a LibTorch built with its own protobuf inside (Python's wheels,
# CAFFE2_LINK_LOCAL_PROTOBUF) defines protobuf::libprotobuf as an empty stand-in target when none
# exists yet (its Caffe2Config.cmake), and the TensorBoard messages would link against it: no
# library, no headers. Found first, the system's protobuf is that target. When such a LibTorch
# carries protobuf headers of its own, the system's (those protoc generates for) go before them.
find_package(Protobuf QUIET)
find_package(Torch QUIET)
cohort_require(Torch_FOUND "LibTorch" "libtorch-dev")
get_filename_component(_cohort_torch_include "${TORCH_INSTALL_PREFIX}/include" REALPATH)
get_filename_component(_cohort_protobuf_include "${Protobuf_INCLUDE_DIR}" REALPATH)
if(Protobuf_FOUND AND EXISTS "${_cohort_torch_include}/google/protobuf"
   AND NOT _cohort_torch_include STREQUAL _cohort_protobuf_include)
  message(STATUS "Cohort: LibTorch carries protobuf headers (${TORCH_INSTALL_PREFIX}/include/google/protobuf); "
                 "protobuf ${Protobuf_VERSION}'s go first")
  include_directories(BEFORE SYSTEM ${Protobuf_INCLUDE_DIRS})
endif()
# LibTorch 2.12 and later refuse to compile below C++20 (their headers #error); older ones build as
# C++17, the project's standard.
if(DEFINED Torch_VERSION AND Torch_VERSION VERSION_GREATER_EQUAL 2.12 AND CMAKE_CXX_STANDARD LESS 20)
  message(STATUS "Cohort: C++20 for LibTorch ${Torch_VERSION}")
  set(CMAKE_CXX_STANDARD 20)
endif()

# Boost: program_options for the CLI, unit_test_framework for the tests.
find_package(Boost 1.74 QUIET COMPONENTS program_options)
cohort_require(Boost_PROGRAM_OPTIONS_FOUND "Boost.Program_options" "libboost-program-options-dev")
if(COHORT_BUILD_TESTS)
  find_package(Boost 1.74 QUIET COMPONENTS unit_test_framework)
  cohort_require(Boost_UNIT_TEST_FRAMEWORK_FOUND "Boost.Test" "libboost-test-dev")
endif()

find_package(nlohmann_json 3 QUIET)
cohort_require(nlohmann_json_FOUND "nlohmann JSON" "nlohmann-json3-dev")

find_package(Slurm)
cohort_require(Slurm_FOUND "libslurm" "libslurm-dev")

# zlib reads gzipped imports (IDX, CSV); xxHash checksums data and checkpoint files.
find_package(ZLIB QUIET)
cohort_require(ZLIB_FOUND "zlib" "zlib1g-dev")
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(XXHASH QUIET IMPORTED_TARGET libxxhash)
endif()
cohort_require(XXHASH_FOUND "xxHash" "libxxhash-dev")

# SentencePiece trains and applies subword tokenizers (`cohort data tokenizer`, `import text`).
if(PkgConfig_FOUND)
  pkg_check_modules(SENTENCEPIECE QUIET IMPORTED_TARGET sentencepiece)
endif()
cohort_require(SENTENCEPIECE_FOUND "SentencePiece" "libsentencepiece-dev")

# RE2 matches the name patterns of model.freeze, model.init_skip and optim.lr_scale in linear time,
# without recursion (a config's pattern cannot overflow the stack or match exponentially).
if(PkgConfig_FOUND)
  pkg_check_modules(RE2 QUIET IMPORTED_TARGET re2)
endif()
cohort_require(RE2_FOUND "RE2" "libre2-dev")

# libjpeg-turbo and libpng decode `cohort data import images` (the libraries Pillow uses).
find_package(JPEG QUIET)
cohort_require(JPEG_FOUND "libjpeg-turbo" "libjpeg62-turbo-dev")
find_package(PNG QUIET)
cohort_require(PNG_FOUND "libpng" "libpng-dev")

# Protobuf encodes TensorBoard event files (monitor.tensorboard_dir); protoc generates the messages.
# Found before LibTorch (above).
cohort_require(Protobuf_FOUND "protobuf" "libprotobuf-dev")
cohort_require(Protobuf_PROTOC_EXECUTABLE "protoc" "protobuf-compiler")

# prometheus-cpp (pull: the /metrics endpoint, over civetweb, in cohort-exporter).
find_package(prometheus-cpp QUIET CONFIG)
cohort_require(prometheus-cpp_FOUND "prometheus-cpp" "prometheus-cpp-dev")
find_package(civetweb QUIET CONFIG)
cohort_require(civetweb_FOUND "civetweb" "libcivetweb-dev")

# NCCL + CUDA: AUTO turns the backend on when both are found.
set(COHORT_HAVE_NCCL OFF)
if(NOT COHORT_WITH_NCCL STREQUAL "OFF")
  if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  find_package(Nccl)
  if(CUDAToolkit_FOUND AND Nccl_FOUND)
    set(COHORT_HAVE_NCCL ON)
  elseif(COHORT_WITH_NCCL STREQUAL "ON")
    message(FATAL_ERROR "COHORT_WITH_NCCL=ON but CUDA (found: ${CUDAToolkit_FOUND}) or NCCL (found: "
                        "${Nccl_FOUND}) is missing: install CUDA and NCCL (Debian: nvidia-cuda-toolkit, "
                        "libnccl-dev) or set COHORT_WITH_NCCL=AUTO")
  endif()
endif()
message(STATUS "Cohort: NCCL backend ${COHORT_HAVE_NCCL} (COHORT_WITH_NCCL=${COHORT_WITH_NCCL})")
