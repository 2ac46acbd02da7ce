#include "data/mpio_access.hpp"

#include "comm/mpi/mpi_check.hpp"
#include "comm/mpi/mpi_session_impl.hpp"
#include "io/h5/h5_check.hpp"

namespace cohort::data {

using io::h5::h5_lock;
using io::h5::Hid;

struct MpioAccess::Comm {
  MPI_Comm comm = MPI_COMM_NULL;
  ~Comm() {
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);  // nothing to report from a destructor
  }
};

MpioAccess::MpioAccess(const comm::MpiSession& session) : comm_(std::make_unique<Comm>()) {
  COHORT_MPI_CHECK(MPI_Comm_dup(comm::session_impl(session).world, &comm_->comm));
  auto lock = h5_lock();
  const char* where = "HDF5 MPI-IO driver";
  fapl_ = Hid(COHORT_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS), where));
  COHORT_H5_CHECK(H5Pset_fapl_mpio(fapl_.get(), comm_->comm, MPI_INFO_NULL), where);
  dxpl_ = Hid(COHORT_H5_CHECK(H5Pcreate(H5P_DATASET_XFER), where));
  COHORT_H5_CHECK(H5Pset_dxpl_mpio(dxpl_.get(), H5FD_MPIO_COLLECTIVE), where);
}

MpioAccess::~MpioAccess() {
  fapl_.reset();
  dxpl_.reset();
}

}  // namespace cohort::data
