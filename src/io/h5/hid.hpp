// Hid: RAII owner of one HDF5 identifier (file, group, dataset, dataspace, datatype, property list,
// attribute). The destructor drops the reference with H5Idec_ref under the HDF5 lock; it never
// throws. Move-only.
#pragma once

#include <hdf5.h>

#include <utility>

namespace cohort::io::h5 {

class Hid {
 public:
  Hid() = default;
  explicit Hid(hid_t id) : id_(id) {}
  ~Hid() { reset(); }
  Hid(Hid&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Hid& operator=(Hid&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() noexcept;

 private:
  hid_t id_ = H5I_INVALID_HID;
};

}  // namespace cohort::io::h5
