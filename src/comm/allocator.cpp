#include "cohort/comm/allocator.hpp"

#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cohort/env/environment.hpp"

namespace cohort::comm {

AllocatorTuning tune_allocator(bool wanted) {
  static AllocatorTuning result;
  static std::once_flag once;
  std::call_once(once, [wanted] {
    const auto setting = env::Environment::from_process().get("COHORT_MALLOC_TUNING");
    const bool forced_off = setting == std::optional<std::string>("0");
    const bool forced_on = setting == std::optional<std::string>("1");
    if (forced_off || (!wanted && !forced_on)) {
      result = {false, forced_off ? "off (COHORT_MALLOC_TUNING=0)" : "off (train.malloc_tuning)"};
      return;
    }
    // One arena: a thread's own arena lives in mmapped heaps of at most 64 MiB that are trimmed
    // and remapped on their own (the communication worker's 64 MiB buffers were 10x slower).
    // Each mallopt returns 1 on success.
    const bool one_arena = mallopt(M_ARENA_MAX, 1) == 1;
    const bool no_mmap = mallopt(M_MMAP_MAX, 0) == 1;
    const bool no_trim = mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
    const bool top_pad = mallopt(M_TOP_PAD, 256 << 20) == 1;
    const bool ok = one_arena && no_mmap && no_trim && top_pad;
    result = {ok, ok ? "M_ARENA_MAX=1 M_MMAP_MAX=0 M_TRIM_THRESHOLD=1GiB M_TOP_PAD=256MiB"
                     : "mallopt refused"};
  });
  return result;
}

}  // namespace cohort::comm
