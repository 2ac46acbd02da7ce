#include "cohort/ckpt/reader.hpp"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "cohort/ckpt/inspect.hpp"
#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"

namespace cohort::ckpt {
namespace {

// Elements [from, from + count) of `slice` into `at`; verified (a whole slice), the checksum is
// taken piece by piece as the pieces arrive. Returns the bytes matched to the checksum.
std::int64_t read_slice(ShardReader& reader, const TensorEntry& entry, const SliceEntry& slice,
                        std::int64_t from, std::int64_t count, void* at, bool verify,
                        const std::string& file) {
  if (!verify) {
    reader.read(entry.name, entry.dtype, from, count, at);
    return 0;
  }
  io::StreamingChecksum checksum;
  reader.read(entry.name, entry.dtype, from, count, at, checksum);
  COHORT_CHECK(checksum.result() == slice.checksum, IoError, file, ": slice ", entry.name,
               " does not match its checksum");
  return count * dtype_bytes(entry.dtype);
}

}  // namespace

CheckpointReader::CheckpointReader(std::string step_dir)
    : path_(std::move(step_dir)), manifest_(read_manifest(path_)) {
  // Before anything is allocated for a slice: every shard holds at least what it claims.
  for (const auto& problem : shard_backing_problems(manifest_, path_)) {
    COHORT_CHECK(problem.empty(), IoError, problem);
  }
}

ShardReader& CheckpointReader::shard(int index) {
  auto it = shards_.find(index);
  if (it == shards_.end()) {
    const ShardEntry& entry = manifest_.shards.at(static_cast<std::size_t>(index));
    // Only the shards this rank reads: their metadata, rank_state included, before HDF5 opens it.
    const auto problem = shard_metadata_problem(manifest_, path_, static_cast<std::size_t>(index));
    COHORT_CHECK(problem.empty(), IoError, problem);
    it = shards_.emplace(index, ShardReader(path_ + "/" + entry.file)).first;
  }
  return it->second;
}

void CheckpointReader::read(const TensorEntry& entry, void* out, bool verify) {
  read(entry, out, [verify](std::size_t) { return verify; });
}

void CheckpointReader::read(const TensorEntry& entry, void* out,
                            const std::function<bool(std::size_t)>& checked) {
  const std::int64_t element = dtype_bytes(entry.dtype);
  auto* base = static_cast<unsigned char*>(out);
  for (std::size_t i = 0; i < entry.slices.size(); ++i) {
    const SliceEntry& slice = entry.slices[i];
    // Manifest::parse checked that every slice names an existing shard.
    const std::string file =
        path_ + "/" + manifest_.shards[static_cast<std::size_t>(slice.shard)].file;
    ShardReader& reader = shard(slice.shard);
    COHORT_CHECK(reader.slice_offset(entry.name) == slice.offset, IoError, file, ": slice ",
                 entry.name, " does not start where the manifest says");
    void* at = base + slice.offset * element;
    checked_bytes_ += read_slice(reader, entry, slice, 0, slice.count, at, checked(i), file);
  }
}

void CheckpointReader::read_range(const TensorEntry& entry, std::int64_t offset, std::int64_t count,
                                  void* out, bool verify) {
  const std::int64_t element = dtype_bytes(entry.dtype);
  COHORT_CHECK(offset >= 0 && count >= 0 && offset <= entry.numel() - count, IoError, path_,
               "/manifest.json: elements [", offset, ", +", count, ") of tensor '", entry.name,
               "' lie outside its ", entry.numel());
  auto* base = static_cast<unsigned char*>(out);
  std::int64_t covered = 0;
  for (const auto& slice : entry.slices) {
    const std::int64_t begin = std::max(slice.offset, offset);
    const std::int64_t end = std::min(slice.offset + slice.count, offset + count);
    if (begin >= end) continue;
    const std::string file =
        path_ + "/" + manifest_.shards[static_cast<std::size_t>(slice.shard)].file;
    ShardReader& reader = shard(slice.shard);
    COHORT_CHECK(reader.slice_offset(entry.name) == slice.offset, IoError, file, ": slice ",
                 entry.name, " does not start where the manifest says");
    unsigned char* at = base + (begin - offset) * element;
    const bool whole_slice = begin == slice.offset && end == slice.offset + slice.count;
    if (!verify || whole_slice) {
      checked_bytes_ +=
          read_slice(reader, entry, slice, begin - slice.offset, end - begin, at, verify, file);
    } else {
      // The slice's own size, which the shard file was checked to back.
      std::vector<unsigned char> whole(static_cast<std::size_t>(slice.count * element));
      reader.read(entry.name, entry.dtype, 0, slice.count, whole.data());
      COHORT_CHECK(io::bytes_checksum(whole.data(), whole.size()) == slice.checksum, IoError, file,
                   ": slice ", entry.name, " does not match its checksum");
      checked_bytes_ += static_cast<std::int64_t>(whole.size());
      std::memcpy(at, whole.data() + (begin - slice.offset) * element,
                  static_cast<std::size_t>((end - begin) * element));
    }
    covered += end - begin;
  }
  // Manifest::parse checked that the slices tile the tensor; a range is therefore covered.
  COHORT_CHECK(covered == count, IoError, path_, "/manifest.json: the slices of tensor '",
               entry.name, "' leave part of [", offset, ", +", count, ") uncovered");
}

std::string CheckpointReader::rank_state(int rank) {
  for (std::size_t i = 0; i < manifest_.shards.size(); ++i) {
    if (manifest_.shards[i].rank == rank) return shard(static_cast<int>(i)).rank_state();
  }
  return {};
}

}  // namespace cohort::ckpt
