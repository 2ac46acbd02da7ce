// One checkpoint shard: an HDF5 file a rank writes with its slices (docs/formats/checkpoint.md).
//
// Layout: root attributes format = "cohort-checkpoint-shard", format_version, rank, world_size,
// step; one 1-D dataset per slice at /slices/<tensor name> holding `count` elements of the
// tensor's flat row-major order from element `offset` (attributes offset, dtype, and global_shape
// as text, "[40, 20]"); /rank_state, this rank's own resume state (sampler position, RNG states) as
// opaque bytes. bfloat16 is stored as uint16 with dtype = "bfloat16"; bool as uint8. write_shard()
// creates the file, writes it whole, closes it and fsyncs it, and returns each slice's checksum
// (xxh3-64 of its bytes, as the manifest records them) and where its bytes lie, and the checksum
// of every other byte of the file (HDF5's metadata, the attributes, rank_state): with both, every
// byte a load reads is covered, and metadata_checksum() finds damage before HDF5 parses it. HDF5
// goes through the io module's layer (Hid, COHORT_H5_CHECK, the process-wide lock); a slice stored
// as written (contiguous, native type) is read with pread(2) at its offset (h5::RowLocator), hashed
// piece by piece as it arrives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cohort/io/checksum.hpp"

namespace cohort::ckpt {

struct ShardSlice {
  std::string name;
  std::string dtype;  // float32, float64, float16, bfloat16, int64, int32, uint8, bool
  std::vector<std::int64_t> global_shape;
  std::int64_t offset = 0;
  std::int64_t count = 0;
  const void* data = nullptr;  // count elements
};

struct ShardHeader {
  int rank = 0;
  int world_size = 1;
  std::int64_t step = 0;
};

std::int64_t dtype_bytes(const std::string& dtype);  // throws IoError for an unknown dtype

struct WrittenShard {
  std::vector<std::string> checksums;   // per slice, in the order given
  std::vector<std::int64_t> addresses;  // per slice: the file offset of its bytes
  std::string metadata_checksum;        // of the bytes outside the slices' (see below)
};

WrittenShard write_shard(const std::string& path, const ShardHeader& header,
                         const std::vector<ShardSlice>& slices, const std::string& rank_state);

// A slice's bytes in a shard file: [address, address + bytes).
struct DataExtent {
  std::int64_t address = 0;
  std::int64_t bytes = 0;
};

// xxh3-64 of the bytes of `path` outside `data`, read with pread(2), never through HDF5. IoError
// naming the file when the extents overlap or reach past its end.
std::string metadata_checksum(const std::string& path, std::vector<DataExtent> data);

// Reads parts of one shard. Every error is an IoError naming the file and the slice. Each slice's
// dataset is opened once and kept open while the reader lives; one thread at a time.
class ShardReader {
 public:
  explicit ShardReader(const std::string& path);
  ~ShardReader();
  ShardReader(ShardReader&&) noexcept;
  ShardReader& operator=(ShardReader&&) noexcept;

  const ShardHeader& header() const;
  // Elements [from, from + count) of the slice stored for `name`, as `dtype` (must match).
  void read(const std::string& name, const std::string& dtype, std::int64_t from,
            std::int64_t count, void* out) const;
  // The same, read in pieces of at most 1 MiB, each handed to `sink` right after it arrived
  // (while it is still in the cache: a checksum then costs little more than the read).
  void read(const std::string& name, const std::string& dtype, std::int64_t from,
            std::int64_t count, void* out, io::StreamingChecksum& sink) const;
  std::int64_t slice_offset(const std::string& name) const;
  std::string rank_state() const;

 private:
  void read_checked(const std::string& name, const std::string& dtype, std::int64_t from,
                    std::int64_t count, void* out, io::StreamingChecksum* sink) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::ckpt
