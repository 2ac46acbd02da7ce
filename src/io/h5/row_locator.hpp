// RowLocator: where each row of a dataset lies in its file, resolved once, so that rows can be
// read with pread(2) instead of one H5Dread per run. HDF5 1.10 spends tens of microseconds in
// every H5Dread; a shuffled batch of 256 small samples is 256 runs, which made the shuffled read
// path 20x slower than the contiguous one. Only layouts whose bytes are the rows as they are in
// memory qualify: no filters, a stored type identical to the native one, and either a contiguous
// layout or chunks of whole rows, every one allocated. Anything else reads through HDF5.
//
// The file must not change while it is read (true of datasets in training; writers replace files
// by rename, which leaves an open descriptor on the old one).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cohort/io/dtype.hpp"
#include "io/h5/file.hpp"

namespace cohort::io::h5 {

// A piece of a file: what one pread reads.
struct Extent {
  std::uint64_t address = 0;
  std::size_t bytes = 0;
};

class RowLocator {
 public:
  // nullopt when the dataset's layout does not qualify.
  static std::optional<RowLocator> build(hid_t dataset, DType dtype, const std::string& where);

  // Reads the runs back to back into out with pread on fd; throws IoError naming `where` on a
  // short read (a truncated file) or an error.
  void read(int fd, const std::vector<Run>& runs, void* out, const std::string& where) const;
  // The pieces of the file read() reads for these runs, in order (the I/O benchmark's baseline
  // preads them alone).
  std::vector<Extent> extents(const std::vector<Run>& runs, const std::string& where) const;

 private:
  // Calls visit(Extent) for each piece of the runs, in order; checks the runs' bounds.
  template <typename Visit>
  void for_each_extent(const std::vector<Run>& runs, const std::string& where, Visit&& visit) const;
  std::size_t row_bytes_ = 0;
  std::int64_t rows_ = 0;
  std::int64_t rows_per_chunk_ = 0;       // 0: contiguous
  std::vector<std::uint64_t> addresses_;  // contiguous: one; chunked: one per chunk
};

}  // namespace cohort::io::h5
