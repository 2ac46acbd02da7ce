// Keeps large buffers warm. glibc serves allocations above its mmap threshold (at most 32 MiB on
// 64-bit) with fresh mappings and unmaps them on free; touching fresh pages cost ~50x more than
// warm ones on the build VMs, so a 64 MiB all-reduce (tensor plus Open MPI's temporary buffer,
// both allocated per call) went from ~45 ms to ~650 ms. tune_allocator() turns mmap off for
// malloc (M_MMAP_MAX=0) and stops heap trimming (M_TRIM_THRESHOLD), so freed memory is reused.
// MpiSession calls it at start-up unless COHORT_MALLOC_TUNING=0; docs/performance.md has figures.
#pragma once

namespace cohort::comm {

struct AllocatorTuning {
  bool applied = false;
  const char* reason = "";
};

// Idempotent. Reads COHORT_MALLOC_TUNING (0 disables).
AllocatorTuning tune_allocator();

}  // namespace cohort::comm
