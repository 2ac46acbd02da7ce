// MpiSession's state, visible to the MPI backend only (the public header keeps mpi.h out).
#pragma once

#include <mpi.h>

#include <memory>

#include "cohort/comm/mpi_session.hpp"
#include "rendezvous.hpp"

namespace cohort::comm {

// Owns what the session took: its communicators, MPI itself when the session initialised it, and
// the rendezvous. The release is here, not in ~MpiSession, so that it also runs when the
// session's constructor throws half-way (the constructed Impl is destroyed then, the session's
// destructor is not run).
struct MpiSession::Impl {
  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    // Destructors never throw: return codes are ignored here on purpose, MPI is going away.
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
    if (world != MPI_COMM_NULL) MPI_Comm_free(&world);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_mpi && !finalized) MPI_Finalize();
    rendezvous.reset();  // stops ompi-server, which the finalize may still have needed
  }

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
