// Facts about the running process and node that `cohort env` reports: host name, CPU count,
// and which BLAS library the process really calls.
#pragma once

#include <string>

namespace cohort::env {

struct BlasInfo {
  std::string library;  // resolved path of the library that provides dgemm_, or "none"
  std::string vendor;   // "openblas", "reference", "mkl", "blis", "unknown"
  std::string detail;   // e.g. OpenBLAS's config string
};

// Looks up the dgemm_ symbol among the loaded libraries (LibTorch loads the BLAS alternative).
BlasInfo blas_info();

std::string hostname();
int online_cpus();

}  // namespace cohort::env
