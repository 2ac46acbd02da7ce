// CheckpointReader: one process reassembling whole tensors from a committed checkpoint, whatever
// world size wrote it. Used by the collective loader (each rank reads every tensor it wants) and
// by `cohort ckpt export`. No MPI.
//
// Protocol: construct it on a step directory (the manifest is read and validated there), then
// read() any tensor of the manifest's index into a buffer of its global size. Shard files are
// opened on first use and kept open for the reader's lifetime. Every error is an IoError naming
// the file and the slice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "cohort/ckpt/manifest.hpp"
#include "cohort/ckpt/shard_file.hpp"

namespace cohort::ckpt {

class CheckpointReader {
 public:
  explicit CheckpointReader(std::string step_dir);

  const std::string& path() const { return path_; }
  const Manifest& manifest() const { return manifest_; }

  // Fills `out` with the entry's numel() elements of its dtype, in row-major order, from its
  // slices; with `verify`, each slice must match its checksum.
  void read(const TensorEntry& entry, void* out, bool verify);
  // The same, matching to their checksums only the slices `checked` picks (by their index in
  // entry.slices): the others are read unchecked, for a caller that has them checked elsewhere.
  void read(const TensorEntry& entry, void* out, const std::function<bool(std::size_t)>& checked);
  // Fills `out` with the elements [offset, offset + count) of the entry (a part, as ZeRO's ranks
  // hold them) from the slices that cover them. With `verify`, a slice only partly wanted is
  // still read whole to match its checksum (one slice's bytes of scratch at a time).
  void read_range(const TensorEntry& entry, std::int64_t offset, std::int64_t count, void* out,
                  bool verify);
  // The bytes of slices this reader has matched to their checksums so far.
  std::int64_t checked_bytes() const { return checked_bytes_; }
  // The opaque state the rank `rank` wrote (empty when no shard of that rank exists).
  std::string rank_state(int rank);

 private:
  ShardReader& shard(int index);

  std::string path_;
  Manifest manifest_;
  std::map<int, ShardReader> shards_;
  std::int64_t checked_bytes_ = 0;
};

}  // namespace cohort::ckpt
