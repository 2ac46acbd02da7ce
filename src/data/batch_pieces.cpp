#include "data/batch_pieces.hpp"

#include <algorithm>
#include <string>
#include <tuple>

#include "cohort/data/dataset.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "io/h5/file.hpp"

namespace cohort::data {
namespace {

// The datasets a batch reads, per shard: (dataset path, dtype, field index or -1).
std::vector<std::tuple<std::string, DType, int>> batch_datasets(const DatasetInfo& info) {
  std::vector<std::tuple<std::string, DType, int>> out;
  if (info.kind == DatasetKind::kFields) {
    for (std::size_t f = 0; f < info.fields.size(); ++f) {
      const auto& field = info.fields[f];
      out.emplace_back(field.ragged ? field.location + "/values" : field.location, field.dtype,
                       static_cast<int>(f));
    }
  } else if (info.kind == DatasetKind::kSamples) {
    out.emplace_back("/inputs", info.input_dtype, -1);
    out.emplace_back("/targets", info.target_dtype, -1);
  }
  return out;
}

}  // namespace

std::optional<BatchPieces> batch_pieces(const std::string& path, std::int64_t batch) {
  const DatasetInfo info = describe(path);
  const auto datasets = batch_datasets(info);
  if (datasets.empty()) return std::nullopt;
  BatchPieces pieces;
  std::vector<std::vector<io::h5::RowLocator>> rows(info.shards.size());
  for (std::size_t s = 0; s < info.shards.size(); ++s) {
    const auto& shard = info.shards[s];
    const io::h5::Hid file = io::h5::open_file(shard.path);
    for (const auto& [name, dtype, field] : datasets) {
      const io::h5::Hid dataset = io::h5::open_dataset(file.get(), name, shard.path);
      auto locator = io::h5::RowLocator::build(dataset.get(), dtype, shard.path);
      if (!locator) return std::nullopt;
      rows[s].push_back(std::move(*locator));
    }
    pieces.fds.push_back(UniqueFd::open_read_only(shard.path));
  }
  std::size_t s = 0;
  std::int64_t shard_first = 0;  // global index of shard s's first sample
  for (std::int64_t first = 0; first < info.num_samples; first += batch) {
    auto& reads = pieces.batches.emplace_back();
    std::size_t bytes = 0;
    for (std::int64_t i = first; i < std::min(info.num_samples, first + batch);) {
      while (i >= shard_first + info.shards[s].samples) shard_first += info.shards[s++].samples;
      const auto& shard = info.shards[s];
      const std::int64_t row = i - shard_first;
      const std::int64_t count =
          std::min(std::min(info.num_samples, first + batch) - i, shard.samples - row);
      for (std::size_t d = 0; d < datasets.size(); ++d) {
        const int field = std::get<2>(datasets[d]);
        io::h5::Run run{row, count};
        if (field >= 0 && info.fields[static_cast<std::size_t>(field)].ragged) {
          const auto& offsets = *shard.offsets[static_cast<std::size_t>(field)];
          run = {offsets[static_cast<std::size_t>(row)],
                 offsets[static_cast<std::size_t>(row + count)] -
                     offsets[static_cast<std::size_t>(row)]};
        }
        for (const auto& extent : rows[s][d].extents({run}, shard.path)) {
          reads.push_back({s, extent});
          bytes += extent.bytes;
        }
      }
      i += count;
    }
    pieces.largest = std::max(pieces.largest, bytes);
  }
  return pieces;
}

std::int64_t pieces_read(const BatchPieces& pieces, std::vector<std::vector<char>>& buffers,
                         std::size_t first, std::size_t stride) {
  std::vector<std::string> names;  // for errors, made once rather than per read
  for (std::size_t shard = 0; shard < pieces.fds.size(); ++shard) {
    names.push_back("bench io: shard " + std::to_string(shard));
  }
  std::int64_t total = 0;
  std::size_t next = 0;
  for (std::size_t b = first; b < pieces.batches.size(); b += stride) {
    const auto& batch = pieces.batches[b];
    char* at = buffers[next++ % buffers.size()].data();
    for (const auto& read : batch) {
      io::read_at(pieces.fds[read.shard].get(), static_cast<std::int64_t>(read.extent.address), at,
                  read.extent.bytes, names[read.shard]);
      at += read.extent.bytes;
      total += static_cast<std::int64_t>(read.extent.bytes);
    }
  }
  return total;
}

}  // namespace cohort::data
