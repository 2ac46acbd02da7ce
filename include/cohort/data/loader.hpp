// DataLoader: a rank's view of a dataset for training: DistributedSampler order, batches read by a
// BatchReader, prefetched by a background thread into a bounded queue.
//
// Protocol:
//  - next() returns the epoch's next batch, or nullopt once the epoch is over; the loader then
//    stands at batch 0 of the next epoch. Batch b of epoch e is always the sampler's indices
//    [b*B, (b+1)*B) for that epoch, whatever was prefetched, so the sequence is deterministic.
//  - state() is where next() continues; restore(state) continues from there exactly (a resumed
//    run yields the batches the uninterrupted run would have yielded next). Prefetched batches
//    that do not match are dropped.
//  - With prefetch > 0 `workers` threads (each with its own reader) read ahead up to `prefetch`
//    batches (at least one per reader), across epoch ends, each claiming the next batch no thread
//    has begun; next() yields them in order: the same batches whichever thread read them. An
//    error in a read reaches the caller from next(). With caller_reads, next() does not sleep
//    while the window holds an unclaimed batch: it reads that one itself, with a reader of its
//    own (a data-bound loop gains a reader; the wake-up of a sleeping thread, dear on a VM, is
//    mostly avoided). With prefetch = 0 next() reads on the calling thread. The destructor stops
//    and joins the threads; it never throws.
//  - wait statistics: how long next() blocked for each batch (the data-wait share of a step).
//  - Bucketing (bucket > 0, ragged field datasets): the sampler's order for the epoch is cut into
//    windows of `bucket` batches; each window is sorted by the length of the first ragged input
//    field (stable) and cut into batches, whose order within the window is then shuffled, seeded
//    by (seed, epoch, window). Batches pad less; which samples an epoch sees is unchanged, and the
//    order is a function of (seed, epoch), so resume stays exact.
//  - With the MPI-IO driver (collective reads) every rank must call next(), restore() and the
//    destructor in lockstep, as a training loop does: the ranks' reads are matched one to one,
//    and a stopping producer first reads up to the same point on every rank.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "cohort/data/reader.hpp"
#include "cohort/data/sampler.hpp"

namespace cohort::data {

struct LoaderOptions {
  std::string path;
  std::int64_t batch_size = 32;  // per rank
  int rank = 0;
  int world = 1;
  std::uint64_t seed = 0;
  bool shuffle = true;
  bool drop_last = false;       // sampler: cut the uneven tail instead of padding (torch's sense)
  bool drop_last_batch = true;  // drop a final partial batch, so every rank's batches are full
  int prefetch = 2;             // batches read ahead; 0: synchronous
  // Threads reading and converting batches in parallel (each with its own reader), the batches
  // still yielded in order: for conversion- or augmentation-bound data. 1 with MPI-IO.
  int workers = 1;
  // While next() waits for a batch a worker is reading, it reads the next unclaimed one itself
  // (its own reader) instead of sleeping. Off with MPI-IO (collective reads).
  bool caller_reads = true;
  // A TorchScript module applied to each batch's inputs by the worker (data/transform.hpp;
  // docs/data.md "User transforms"); empty: none.
  std::string transform;
  std::int64_t bucket = 0;  // batches per length-bucketing window (0: the sampler's order)
  // Test hook (debug.data_delay_ms): each batch read takes this much longer, as from a slow
  // filesystem, so that the monitor's data-bound diagnosis can be shown to fire.
  int read_delay_ms = 0;
  ReaderOptions reader;
};

struct LoaderState {
  std::int64_t epoch = 0;
  std::int64_t batch = 0;  // the next batch to yield within the epoch
  bool operator==(const LoaderState& other) const {
    return epoch == other.epoch && batch == other.batch;
  }
};

struct WaitStats {
  double last_seconds = 0;
  double total_seconds = 0;
  std::int64_t batches = 0;
  std::int64_t own_reads = 0;  // items next() read itself while waiting (caller_reads)
};

class DataLoader {
 public:
  explicit DataLoader(LoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  const DatasetInfo& info() const;
  std::int64_t batches_per_epoch() const;
  std::int64_t samples_per_rank() const;

  std::optional<Batch> next();
  LoaderState state() const;
  void restore(LoaderState state);

  const WaitStats& wait() const;
  ReadStats read_stats() const;  // of the reader (consistent once the thread is idle or stopped)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::data
