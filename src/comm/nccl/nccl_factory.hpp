// Builds the NCCL backend; nccl_communicator.cpp when NCCL is compiled in, nccl_absent.cpp if not.
#pragma once

#include <memory>

#include "cohort/comm/communicator.hpp"
#include "cohort/comm/mpi_session.hpp"

namespace cohort::comm::nccl {

bool compiled();
std::unique_ptr<Communicator> make_communicator(const MpiSession& session, CommOptions options,
                                                std::shared_ptr<Watchdog> watchdog);

}  // namespace cohort::comm::nccl
