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
  // MPI_Abort ends every rank of the job (mpirun and srun both propagate the code).
  auto watchdog = std::make_shared<Watchdog>([](int code) { MPI_Abort(MPI_COMM_WORLD, code); });
  if (backend == Backend::kNccl) return nccl::make_communicator(session, options, watchdog);
  MPI_Comm comm = MPI_COMM_NULL;
  COHORT_MPI_CHECK(MPI_Comm_dup(session_impl(session).world, &comm));
  return std::make_unique<MpiCommunicator>(comm, options, std::move(watchdog));
}

}  // namespace cohort::comm
