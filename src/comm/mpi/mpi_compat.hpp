// What differs between the Open MPI releases Cohort builds against (Debian 12: 4.1; Debian 13:
// 5.0), in one place.
#pragma once

#include <mpi.h>

namespace cohort::comm::mpi_compat {

// ompi-server: the rendezvous server that lets processes started apart (torchrun-style) connect
// with MPI_Comm_connect/accept. Open MPI 5 removed it with ORTE; its replacement, a PRRTE DVM
// (`prte --report-uri`), only admits processes that `mpiexec --dvm` itself starts.
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
constexpr bool kHasOmpiServer = false;
#else
constexpr bool kHasOmpiServer = true;
#endif

}  // namespace cohort::comm::mpi_compat
