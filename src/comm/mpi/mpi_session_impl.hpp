// MpiSession's state, visible to the MPI backend only (the public header keeps mpi.h out).
#pragma once

#include <mpi.h>

#include "cohort/comm/mpi_session.hpp"

namespace cohort::comm {

struct MpiSession::Impl {
  bool owns_mpi = false;
  MPI_Comm world = MPI_COMM_NULL;  // Cohort's duplicate of MPI_COMM_WORLD
  MPI_Comm node = MPI_COMM_NULL;   // ranks sharing memory with this one
  int rank = 0;
  int size = 1;
  int node_rank = 0;
  int node_size = 1;
};

inline const MpiSession::Impl& session_impl(const MpiSession& session) { return *session.impl_; }

}  // namespace cohort::comm
