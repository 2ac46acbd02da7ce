// MpioAccess: the property lists for HDF5's MPI-IO driver on a communicator of the data module's
// own (a duplicate of the session's, so that file I/O never shares a communicator with training
// collectives). RAII: frees the communicator and the lists; never throws from the destructor.
// Parallel HDF5 takes an MPI_Comm, so this is the one place outside comm/ that touches one.
#pragma once

#include <memory>

#include "io/h5/hid.hpp"

namespace cohort::comm {
class MpiSession;
}

namespace cohort::data {

class MpioAccess {
 public:
  explicit MpioAccess(const comm::MpiSession& session);  // collective
  ~MpioAccess();
  MpioAccess(const MpioAccess&) = delete;
  MpioAccess& operator=(const MpioAccess&) = delete;

  hid_t file_access() const { return fapl_.get(); }  // H5Fopen with the MPI-IO driver
  hid_t transfer() const { return dxpl_.get(); }     // collective H5Dread

 private:
  struct Comm;
  std::unique_ptr<Comm> comm_;
  io::h5::Hid fapl_;
  io::h5::Hid dxpl_;
};

}  // namespace cohort::data
