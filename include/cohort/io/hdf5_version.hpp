// The HDF5 library this process really runs with (H5get_libversion), for `cohort env`; the
// headers Cohort was built with may be older or newer within the same soname.
#pragma once

#include <string>

namespace cohort::io {

std::string hdf5_library_version();  // "1.14.5"

}  // namespace cohort::io
