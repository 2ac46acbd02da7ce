// Keeps large buffers warm. glibc serves allocations above its mmap threshold (at most 32 MiB on
// 64-bit) with fresh mappings and unmaps them on free; touching fresh pages cost ~50x more than
// warm ones on the build VMs, so a 64 MiB all-reduce (tensor plus Open MPI's temporary buffer,
// both allocated per call) went from ~45 ms to ~650 ms. The tuning turns mmap off for malloc
// (M_MMAP_MAX=0), keeps one arena, stops heap trimming (M_TRIM_THRESHOLD) and grows the heap in
// 256 MiB steps (M_TOP_PAD), so freed memory is reused instead of returned and faulted in again.
//
// Protocol: the first call decides, for the whole process; later calls return that decision.
// `cohort train` calls it with the config's train.malloc_tuning before MpiSession (which calls
// it with the default); COHORT_MALLOC_TUNING=0|1 overrides both. docs/performance.md has figures.
#pragma once

namespace cohort::comm {

struct AllocatorTuning {
  bool applied = false;
  const char* reason = "";
};

AllocatorTuning tune_allocator(bool wanted = true);

}  // namespace cohort::comm
