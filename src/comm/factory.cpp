#include "cohort/comm/factory.hpp"

#include "cohort/error.hpp"
#include "mpi/mpi_check.hpp"
#include "mpi/mpi_communicator.hpp"
#include "mpi/mpi_session_impl.hpp"
#include "nccl/nccl_factory.hpp"
#include "watchdog.hpp"

namespace cohort::comm {

Backend backend_for(const c10::Device& device) {
  return device.is_cuda() ? Backend::kNccl : Backend::kMpi;
}

bool backend_compiled(Backend backend) { return backend == Backend::kMpi || nccl::compiled(); }

std::unique_ptr<Communicator> make_communicator(const MpiSession& session, Backend backend,
                                                CommOptions options) {
  // MPI_Abort on the session's world ends every rank (mpirun and srun both propagate the code;
  // a rendezvous' world spans processes MPI_COMM_WORLD does not).
  MPI_Comm world = session_impl(session).world;
  auto watchdog = std::make_shared<Watchdog>([world](int code) { MPI_Abort(world, code); });
  if (backend == Backend::kNccl) return nccl::make_communicator(session, options, watchdog);
  MPI_Comm comm = MPI_COMM_NULL;
  COHORT_MPI_CHECK(MPI_Comm_dup(session_impl(session).world, &comm));
  return std::make_unique<MpiCommunicator>(comm, options, std::move(watchdog));
}

}  // namespace cohort::comm
