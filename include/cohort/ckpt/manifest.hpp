// Manifest: the index of one committed checkpoint (manifest.json; docs/formats/checkpoint.md).
//
// It names every shard file (relative path, size, checksum) and every tensor (dtype, global shape,
// and the flat slices that make it up, each with the shard that holds it and its checksum), plus
// the training position (step, epoch, samples seen), the world that wrote it, the config hash and
// provenance. parse() validates everything a loader later relies on and throws IoError naming
// the origin and the field: an unknown format version, a missing or mistyped field, a shard path
// that is absolute or leaves the checkpoint directory, a slice that names a missing shard, or
// slices that do not cover their tensor exactly once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cohort::ckpt {

inline constexpr int kManifestVersion = 1;
// Limits on what a manifest may describe (docs/formats/checkpoint.md): more dimensions than
// LibTorch allows, or more elements than 2^50 (8 PiB of float64), is never a real checkpoint.
inline constexpr std::size_t kMaxDims = 64;
inline constexpr std::int64_t kMaxTensorElements = std::int64_t{1} << 50;
// The largest manifest.json read (a manifest costs about 200 bytes per slice).
inline constexpr std::size_t kMaxManifestBytes = std::size_t{256} << 20;

struct SliceEntry {
  int shard = 0;  // index into Manifest::shards
  std::int64_t offset = 0;
  std::int64_t count = 0;
  std::string checksum;  // "xxh3-64:<16 hex>" of the slice's bytes
  std::int64_t at = -1;  // where its bytes begin in the shard file (-1: not recorded)
};

struct TensorEntry {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::vector<SliceEntry> slices;  // sorted by offset, disjoint, covering the tensor
  std::int64_t numel() const;      // -1 when the shape's product overflows (never after parse())
};

struct ShardEntry {
  std::string file;  // relative to the checkpoint directory
  int rank = 0;      // the rank that wrote it
  std::int64_t bytes = 0;
  // xxh3-64 of the file's bytes outside its slices' (HDF5's metadata, attributes, rank_state);
  // "" in checkpoints written before it was recorded, which are then covered by slices only.
  std::string metadata_checksum;
};

struct Manifest {
  int format_version = kManifestVersion;
  std::int64_t step = 0;
  std::int64_t epoch = 0;
  std::int64_t samples_seen = 0;  // global, all ranks: where the sampler resumes
  int world_size = 1;
  int nodes = 1;
  std::string config_hash;
  std::string cohort_version;
  std::string created;  // UTC, ISO 8601
  std::vector<ShardEntry> shards;
  std::vector<TensorEntry> tensors;

  std::string to_json() const;  // pretty-printed, stable key order
  static Manifest parse(const std::string& text, const std::string& origin);
  const TensorEntry* find(const std::string& name) const;
};

// "step-00001200"
std::string step_dir_name(std::int64_t step);
// The step of a name step_dir_name() writes, exactly ("step-00001200" -> 1200); nullopt for every
// other name ("step-00000001-my-backup", "step-old", "step-1", "step-+0000001"). Only such names
// are ever loaded, listed or deleted by retention; anything else in the directory is left alone.
std::optional<std::int64_t> parse_step_dir_name(const std::string& name);
// True for a step directory a save made, damaged or not: a real directory (not a link) holding
// a "manifest.json" of any kind or a "shard-*-of-*.h5" file. Retention removes, and a save of the
// same step replaces, only these: a user's own folder of a step's name is left alone.
bool is_checkpoint_directory(const std::string& path);
// True only for the exact names an interrupted save leaves: "<step dir>.tmp-<tag>" (tag: digits
// and '-', see save_checkpoint()) and "latest.tmp-<pid>". clean_partial() removes nothing else.
bool is_partial_save_name(const std::string& name);

// True for a non-empty relative path whose components never climb out ("..") of its base.
bool is_contained_path(const std::string& path);

}  // namespace cohort::ckpt
