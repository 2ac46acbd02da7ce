// COHORT_H5_CHECK: every HDF5 call goes through this macro. A negative return throws IoError naming
// the call, what it was working on (file and dataset) and the innermost HDF5 message.
//
// Thread safety: Debian's parallel HDF5 is not built thread-safe, so the library's global state
// must be entered by one thread at a time. Every function of this layer holds h5_lock() while it
// calls HDF5; prefetch threads and the training thread can then each own their handles.
#pragma once

#include <hdf5.h>

#include <mutex>
#include <string>

#include "cohort/error.hpp"

namespace cohort::io::h5 {

// The process-wide HDF5 lock (recursive: wrappers call each other).
std::unique_lock<std::recursive_mutex> h5_lock();

// The innermost message on HDF5's error stack ("unable to open file: file signature not found"),
// and clears the stack. Also turns HDF5's own printing to stderr off (once).
std::string h5_error_text();

}  // namespace cohort::io::h5

// COHORT_H5_CHECK(call, context parts...): evaluates call (herr_t or hid_t), throws on < 0.
#define COHORT_H5_CHECK(call, ...)                                         \
  ([&]() {                                                                 \
    const auto cohort_h5_rc_ = (call);                                     \
    if (cohort_h5_rc_ < 0) {                                               \
      COHORT_THROW(::cohort::IoError, __VA_ARGS__, ": ", #call, " failed", \
                   ::cohort::io::h5::h5_error_text());                     \
    }                                                                      \
    return cohort_h5_rc_;                                                  \
  }())
