// Looking at checkpoints from one process, without MPI: what `cohort ckpt list|inspect|verify`
// print. Every error is an IoError naming the file.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "cohort/ckpt/manifest.hpp"

namespace cohort::ckpt {

struct CheckpointEntry {
  std::string path;  // <dir>/step-N
  std::int64_t step = 0;
  bool latest = false;     // the one <dir>/latest names
  bool readable = false;   // its manifest parses and validates
  std::string problem;     // why not, when not
  Manifest manifest;       // when readable
  std::int64_t bytes = 0;  // sum of its shards' sizes, from the manifest
};

// Committed checkpoints of a checkpoint directory, newest first (leftovers of interrupted saves
// are not listed).
std::vector<CheckpointEntry> list_checkpoints(const std::string& dir);

// The step directory name <dir>/latest holds ("step-00001200"); IoError when it is missing,
// unreadable or names anything but a directory beside it.
std::string read_latest(const std::string& dir);

// Where checkpoints come from, said after an error about a place that holds none.
inline constexpr const char* kWhereCheckpointsComeFrom =
    " (a training run writes them to <train.run_dir>/checkpoints: when it ends, unless "
    "checkpoint.at_end = false; every checkpoint.every_steps steps; at a stop signal)";

// A step directory as given, or the one a checkpoint directory's `latest` names.
std::string resolve_checkpoint(const std::string& path);
Manifest read_manifest(const std::string& step_dir);

// For each shard of `m` (under `step_dir`), why it cannot hold what the manifest says it does, or
// "" when it can: the file must be a regular file at least as large as the bytes of its slices
// (summed with overflow checks, in one pass over the slices). Every reader checks this before it
// allocates for a slice, so no manifest makes Cohort allocate more than the storage holds.
std::vector<std::string> shard_backing_problems(const Manifest& m, const std::string& step_dir);

// Why shard `index`'s bytes outside its slices (HDF5's metadata, the attributes, rank_state) are
// not the ones the manifest's metadata_checksum was taken of, or "" when they are (or when the
// manifest recorded none). Read with pread(2) before HDF5 opens the file: a damaged header or
// rank_state is refused here, by every load and by verify_checkpoint().
std::string shard_metadata_problem(const Manifest& m, const std::string& step_dir,
                                   std::size_t index);

// Reads every slice of every tensor and compares it with its checksum, and each shard's size
// with the manifest's. Returns one line per problem ("<file>: slice X does not match its
// checksum"); empty when the checkpoint is clean.
std::vector<std::string> verify_checkpoint(const std::string& step_dir);

// `cohort ckpt list|inspect`'s summary of a manifest: position, world, counts, bytes, provenance.
nlohmann::json summary_json(const Manifest& manifest);
// A row of `cohort ckpt list --json`: the summary (or step and problem), path and latest.
nlohmann::json to_json(const CheckpointEntry& entry);
// `cohort ckpt inspect --json`: the summary, path and "tensor_index" (name, dtype, shape, slices).
nlohmann::json inspect_json(const Manifest& manifest, const std::string& step_dir);
// `cohort ckpt verify --json`: path, clean and the problems verify_checkpoint() found.
nlohmann::json verify_json(const std::string& step_dir, const std::vector<std::string>& problems);

}  // namespace cohort::ckpt
