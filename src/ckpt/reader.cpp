#include "cohort/ckpt/reader.hpp"

#include <utility>

#include "cohort/ckpt/inspect.hpp"
#include "cohort/error.hpp"

namespace cohort::ckpt {

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
    it = shards_.emplace(index, ShardReader(path_ + "/" + entry.file)).first;
  }
  return it->second;
}

void CheckpointReader::read(const TensorEntry& entry, void* out, bool verify) {
  const std::int64_t element = dtype_bytes(entry.dtype);
  auto* base = static_cast<unsigned char*>(out);
  for (const auto& slice : entry.slices) {
    // Manifest::parse checked that every slice names an existing shard.
    const std::string file =
        path_ + "/" + manifest_.shards[static_cast<std::size_t>(slice.shard)].file;
    ShardReader& reader = shard(slice.shard);
    COHORT_CHECK(reader.slice_offset(entry.name) == slice.offset, IoError, file, ": slice ",
                 entry.name, " does not start where the manifest says");
    void* at = base + slice.offset * element;
    reader.read(entry.name, entry.dtype, 0, slice.count, at);
    COHORT_CHECK(!verify || bytes_checksum(at, static_cast<std::size_t>(slice.count * element)) ==
                                slice.checksum,
                 IoError, file, ": slice ", entry.name, " does not match its checksum");
  }
}

std::string CheckpointReader::rank_state(int rank) {
  for (std::size_t i = 0; i < manifest_.shards.size(); ++i) {
    if (manifest_.shards[i].rank == rank) return shard(static_cast<int>(i)).rank_state();
  }
  return {};
}

}  // namespace cohort::ckpt
