// Build- and run-time facts about the NCCL backend. Two implementations, chosen by CMake:
// nccl_info.cpp (CUDA and NCCL found) and nccl_absent.cpp (not compiled in).
#pragma once

#include "cohort/comm/backend_info.hpp"

namespace cohort::comm::nccl {

BackendInfo info();

}  // namespace cohort::comm::nccl
