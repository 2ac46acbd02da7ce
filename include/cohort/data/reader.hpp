// BatchReader: reads batches of samples, by global index, from a dataset file or shard directory.
//
// Protocol: construct (opens every shard, validates it through describe()), then read() a list of
// indices; the batch comes back in the order asked. Underneath, each shard's indices are sorted,
// de-duplicated and coalesced into runs of consecutive rows, and the runs are read with one
// hyperslab selection (their union) per dataset and shard: one H5Dread, however scattered the
// batch. Inputs come back as float32 (normalized with the dataset's mean/std; uint8 without them
// scaled to [0, 1]) or, for token datasets, int64 [B, seq_len] with targets shifted by one.
// Field datasets come back as one tensor per field by name (Batch::fields, target_fields):
// float fields as float32 (normalized with the field's own mean/std), integer ones as int64
// checked against the field's vocab_size (targets: the file's classes); a ragged field padded
// with zeros to the longest sample in the batch, [B, L, value...], and followed by its mask
// "<name>_mask", bool [B, L], true where a value is real.
//
// I/O drivers: kPosix (default) opens the shards with HDF5's sec2 driver, independently per rank.
// kMpiIo opens them with the MPI-IO driver on a duplicate of the session's communicator and reads
// collectively: then every rank must call read() the same number of times (every rank reads each
// step, as a DistributedSampler guarantees), and the construction is collective too.
//
// A reader is not shared between threads; several readers may live in several threads (the HDF5
// calls underneath take a process-wide lock, since Debian's parallel HDF5 is not thread-safe).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cohort/data/dataset.hpp"

namespace cohort::comm {
class MpiSession;
}

namespace cohort::data {

enum class IoDriver { kPosix, kMpiIo };
IoDriver parse_io_driver(const std::string& name);  // "posix" | "mpio"

// Image augmentation, for inputs shaped [C, H, W] or [H, W]; seeded per (seed, epoch, sample), so
// a sample gets the same crop and flip whichever rank reads it and however the run was resumed.
struct Augmentation {
  int crop_padding = 0;  // random crop: shift by up to this many pixels, zero fill
  bool horizontal_flip = false;
};

struct ReaderOptions {
  IoDriver driver = IoDriver::kPosix;
  const comm::MpiSession* session = nullptr;  // required for kMpiIo
  bool normalize = true;
  Augmentation augment;
  std::uint64_t seed = 0;
  bool pin_memory = true;  // page-locked batches when CUDA is present (ignored without it)
  // Inputs exactly as stored (uint8, float16 or float32 tensors; no conversion, normalization or
  // augmentation): for tools that copy or summarise data.
  bool raw = false;
  // POSIX driver: read rows with pread(2) at offsets resolved once from HDF5's layout, where the
  // layout allows (unfiltered; contiguous or whole-row chunks), instead of one H5Dread per run.
  bool pread_rows = true;
  // Ragged fields: a sample longer than this is cut to its first max_length values (0: never).
  std::int64_t max_length = 0;
  // Field datasets: the target field a batch's `targets` is (empty: the first by name). Every
  // target still comes in target_fields.
  std::string target;
};

struct NamedTensor {
  std::string name;
  at::Tensor tensor;
};

struct Batch {
  at::Tensor inputs;   // field datasets: the first input field
  at::Tensor targets;  // field datasets: the first target
  // Field datasets: the inputs and the targets by name. Raw (as stored): bytes, [B, sample
  // bytes] for a fixed field; a ragged one packed, [values, value bytes] in batch order, followed
  // by "<name>_lengths" (int64 [B]) instead of a mask.
  std::vector<NamedTensor> fields;
  std::vector<NamedTensor> target_fields;
  std::int64_t epoch = 0;
  std::int64_t index = 0;             // batch index within the epoch
  std::vector<std::int64_t> indices;  // the global sample indices, in batch order (DataLoader)
};

struct ReadStats {
  std::int64_t batches = 0;
  std::int64_t samples = 0;
  std::int64_t runs = 0;        // runs of consecutive rows read
  std::int64_t pread_runs = 0;  // of which read with pread(2) (the rest through H5Dread)
  std::int64_t bytes = 0;       // bytes read from the files (stored size)
  double read_seconds = 0;      // inside HDF5
  double convert_seconds = 0;   // conversion, normalization, augmentation
};

class BatchReader {
 public:
  BatchReader(const std::string& path, ReaderOptions options);
  ~BatchReader();
  BatchReader(const BatchReader&) = delete;
  BatchReader& operator=(const BatchReader&) = delete;

  const DatasetInfo& info() const;
  // Indices are global (0..num_samples-1, across shards in order); repeats are allowed.
  Batch read(const std::vector<std::int64_t>& indices, std::int64_t epoch = 0);
  const ReadStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::data
