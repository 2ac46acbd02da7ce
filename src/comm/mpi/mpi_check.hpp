// COHORT_MPI_CHECK: every MPI call goes through this macro. A failure throws CommError naming
// the call and MPI's error string. Our communicators use MPI_ERRORS_RETURN so that we get here.
#pragma once

#include <mpi.h>

#include <string>

#include "cohort/error.hpp"

namespace cohort::comm::detail {

inline std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "unknown MPI error";
  return std::string(text, static_cast<size_t>(length));
}

}  // namespace cohort::comm::detail

#define COHORT_MPI_CHECK(call)                                                           \
  do {                                                                                   \
    const int cohort_mpi_rc_ = (call);                                                   \
    if (cohort_mpi_rc_ != MPI_SUCCESS) {                                                 \
      COHORT_THROW(::cohort::CommError, #call,                                           \
                   " failed: ", ::cohort::comm::detail::mpi_error_text(cohort_mpi_rc_)); \
    }                                                                                    \
  } while (false)
