// Facts about the running process and node that `cohort env` reports: host name, CPU count,
// and which BLAS library the process really calls.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

namespace cohort::env {

struct BlasInfo {
  std::string library;  // resolved path of the library that provides dgemm_, or "none"
  std::string vendor;   // "openblas", "reference", "mkl", "blis", "unknown"
  std::string detail;   // e.g. OpenBLAS's config string
};

// Looks up the dgemm_ symbol among the loaded libraries (LibTorch loads the BLAS alternative).
BlasInfo blas_info();
// `cohort env --json`'s "blas": vendor, library, detail.
nlohmann::json to_json(const BlasInfo& info);

// Sets OpenBLAS's own thread pool size (openblas_set_num_threads), which torch's intra-op setting
// does not reach: OpenBLAS otherwise starts one thread per core in every rank, and ranks sharing
// a node oversubscribe it. OPENBLAS_NUM_THREADS, when set, wins. Returns the threads OpenBLAS
// now uses, or 0 when the process's BLAS is not OpenBLAS.
int set_blas_threads(int threads);

// The resolved path of the loaded library that holds `address` (a function of that library), or
// "unknown": which file the dynamic linker really picked, for `cohort env`.
std::string library_of(const void* address);

std::string hostname();
// The path of this process's executable (/proc/self/exe); nullopt when the kernel does not say.
// Each caller keeps its own fallback (the installation beside it, a name on PATH).
std::optional<std::string> executable_path();
// Seconds since this process was started (its exec: /proc/self/stat's starttime against
// CLOCK_BOOTTIME); 0 when the kernel does not say.
double seconds_since_process_start();
int online_cpus();

// Bytes the host heap has handed out now (malloc's small blocks and mmapped large ones): the
// growth across a piece of code is what it still holds (activations, a pipeline's in-flight
// micro-batches).
std::int64_t heap_bytes_in_use();
// The process's peak resident memory so far (VmHWM of /proc/self/status), in bytes; 0 when the
// kernel does not say.
std::int64_t peak_rss_bytes();

}  // namespace cohort::env
