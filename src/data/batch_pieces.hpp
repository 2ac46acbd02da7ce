// BatchPieces: the pieces of the files a contiguous pass over a dataset reads, batch by batch
// (for each batch, each dataset it touches: every field's, or /inputs and /targets: the file
// extents of its rows), resolved before timing. A raw pread of exactly these is the baseline
// `cohort bench io` holds the loader's own contiguous pass to: the same bytes, the same number
// of reads per batch, nothing else.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cohort/io/unique_fd.hpp"
#include "io/h5/row_locator.hpp"

namespace cohort::data {

struct BatchPieces {
  std::vector<UniqueFd> fds;  // per shard
  struct Read {
    std::size_t shard;
    io::h5::Extent extent;
  };
  std::vector<std::vector<Read>> batches;
  std::size_t largest = 0;  // bytes of the largest batch
};

// nullopt when some dataset's layout has no row extents (compressed, chunks across rows) or the
// set is a token stream.
std::optional<BatchPieces> batch_pieces(const std::string& path, std::int64_t batch);

// pread of the pieces of batches first, first + stride, ..., each batch into the next of
// `buffers` (as batches in flight are: the one in use, the ones read ahead); returns the bytes
// read. stride > 1: one of several threads sharing the pass.
std::int64_t pieces_read(const BatchPieces& pieces, std::vector<std::vector<char>>& buffers,
                         std::size_t first = 0, std::size_t stride = 1);

}  // namespace cohort::data
