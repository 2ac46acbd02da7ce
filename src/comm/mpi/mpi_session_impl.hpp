// MpiSession's state, visible to the MPI backend only (the public header keeps mpi.h out).
#pragma once

#include <mpi.h>

#include <memory>

#include "cohort/comm/mpi_session.hpp"
#include "rendezvous.hpp"

namespace cohort::comm {

struct MpiSession::Impl {
  bool owns_mpi = false;
  std::unique_ptr<Rendezvous> rendezvous;  // processes started apart (torchrun style)
  MPI_Comm world = MPI_COMM_NULL;  // a duplicate of MPI_COMM_WORLD, or the rendezvous' world
  MPI_Comm node = MPI_COMM_NULL;   // ranks sharing memory with this one
  int rank = 0;
  int size = 1;
  int node_rank = 0;
  int node_size = 1;
};

inline const MpiSession::Impl& session_impl(const MpiSession& session) { return *session.impl_; }

}  // namespace cohort::comm
