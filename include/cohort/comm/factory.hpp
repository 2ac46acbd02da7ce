// Picks and builds a communicator backend, so that callers never name one in an #ifdef.
#pragma once

#include <c10/core/Device.h>

#include <memory>

#include "cohort/comm/communicator.hpp"
#include "cohort/comm/mpi_session.hpp"

namespace cohort::comm {

// NCCL for CUDA devices, MPI for everything else.
Backend backend_for(const c10::Device& device);
// Whether this build has the backend compiled in.
bool backend_compiled(Backend backend);

// A communicator over all ranks of the session. Collective over the session's ranks. Throws
// ConfigError when the backend is not compiled in, CommError when it cannot start.
std::unique_ptr<Communicator> make_communicator(const MpiSession& session, Backend backend,
                                                CommOptions options = {});

}  // namespace cohort::comm
