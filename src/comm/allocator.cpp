#include "cohort/comm/allocator.hpp"

#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace cohort::comm {

AllocatorTuning tune_allocator() {
  static AllocatorTuning result;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* setting = std::getenv("COHORT_MALLOC_TUNING");
    if (setting != nullptr && std::strcmp(setting, "0") == 0) {
      result = {false, "disabled by COHORT_MALLOC_TUNING=0"};
      return;
    }
    // Order matters little; both are process-wide and cheap. Each returns 1 on success.
    // One arena: a thread's own arena lives in mmapped heaps of at most 64 MiB that are trimmed
    // and remapped on their own (the communication worker's 64 MiB buffers were 10x slower).
    const bool one_arena = mallopt(M_ARENA_MAX, 1) == 1;
    const bool no_mmap = mallopt(M_MMAP_MAX, 0) == 1;
    const bool no_trim = mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
    const bool ok = one_arena && no_mmap && no_trim;
    result = {ok, ok ? "M_ARENA_MAX=1, M_MMAP_MAX=0, M_TRIM_THRESHOLD=1 GiB" : "mallopt refused"};
  });
  return result;
}

}  // namespace cohort::comm
