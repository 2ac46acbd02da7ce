#include <hdf5.h>

#include <string>

#include "cohort/io/hdf5_version.hpp"
#include "h5_check.hpp"

namespace cohort::io {

std::string hdf5_library_version() {
  unsigned major = 0, minor = 0, release = 0;
  auto lock = h5::h5_lock();
  if (H5get_libversion(&major, &minor, &release) < 0) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

}  // namespace cohort::io
