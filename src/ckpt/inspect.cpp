#include "cohort/ckpt/inspect.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "ckpt/files.hpp"
#include "cohort/ckpt/shard_file.hpp"
#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/files.hpp"
#include "common/checked_math.hpp"

namespace cohort::ckpt {
std::string read_latest(const std::string& dir) {
  std::string name = read_small_file(dir + "/latest", 4096);
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
  COHORT_CHECK(is_contained_path(name) && name.find('/') == std::string::npos, IoError, dir,
               "/latest: names '", name, "', not a step directory beside it");
  return name;
}

Manifest read_manifest(const std::string& step_dir) {
  const std::string file = step_dir + "/manifest.json";
  return Manifest::parse(read_small_file(file, kMaxManifestBytes), file);
}

std::string resolve_checkpoint(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  COHORT_CHECK(!fs::is_symlink(path, error) || fs::exists(path, error), IoError, path,
               ": a link to ", fs::read_symlink(path, error).string(),
               ", which no longer exists (retention removed it, or it was never committed)");
  COHORT_CHECK(fs::exists(path, error), IoError, path, ": no such checkpoint directory",
               kWhereCheckpointsComeFrom);
  COHORT_CHECK(std::filesystem::is_directory(path, error), IoError, path, ": not a directory");
  if (std::filesystem::exists(path + "/manifest.json", error)) return path;
  COHORT_CHECK(!std::filesystem::exists(path + "/checkpoints/latest", error), IoError, path,
               ": a run directory? Its checkpoints are in ", path, "/checkpoints");
  COHORT_CHECK(std::filesystem::exists(path + "/latest", error), IoError, path,
               ": neither a checkpoint (no manifest.json) nor a checkpoint directory (no latest)",
               kWhereCheckpointsComeFrom);
  return path + "/" + read_latest(path);
}

std::vector<CheckpointEntry> list_checkpoints(const std::string& dir) {
  std::error_code error;
  COHORT_CHECK(std::filesystem::is_directory(dir, error), IoError, dir, ": not a directory");
  std::string latest;
  try {
    latest = read_latest(dir);
  } catch (const IoError&) {
    // no (valid) latest: nothing is marked
  }
  std::vector<CheckpointEntry> entries;
  for (const auto& item : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = item.path().filename().string();
    const auto step = parse_step_dir_name(name);
    if (!step) continue;  // not a name Cohort writes: left alone
    CheckpointEntry e;
    e.path = item.path().string();
    e.step = *step;
    e.latest = name == latest;
    try {
      e.manifest = read_manifest(e.path);
      e.readable = true;
      for (const auto& s : e.manifest.shards) e.bytes += s.bytes;
    } catch (const IoError& problem) {
      e.problem = problem.what();
    }
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.step > b.step; });
  return entries;
}

std::vector<std::string> shard_backing_problems(const Manifest& m, const std::string& step_dir) {
  // Claimed bytes per shard; nullopt once a sum overflows (Manifest::parse checked the indices).
  std::vector<std::optional<std::int64_t>> claimed(m.shards.size(), std::int64_t{0});
  for (const auto& t : m.tensors) {
    const auto element = dtype_bytes(t.dtype);
    for (const auto& s : t.slices) {
      auto& sum = claimed[static_cast<std::size_t>(s.shard)];
      const auto bytes = checked::mul(s.count, element);
      sum = sum && bytes ? checked::add(*sum, *bytes) : std::nullopt;
    }
  }
  std::vector<std::string> problems(m.shards.size());
  for (std::size_t i = 0; i < m.shards.size(); ++i) {
    const std::string file = step_dir + "/" + m.shards[i].file;
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      problems[i] = file + ": " + io::describe_path(file) + ", not a shard file";
    } else if (!claimed[i] || *claimed[i] > st.st_size) {
      problems[i] = file + ": " + std::to_string(st.st_size) +
                    " bytes cannot hold the slices the manifest places in it";
    }
  }
  return problems;
}

std::string shard_metadata_problem(const Manifest& m, const std::string& step_dir,
                                   std::size_t index) {
  const ShardEntry& shard = m.shards.at(index);
  if (shard.metadata_checksum.empty()) return "";
  const std::string file = step_dir + "/" + shard.file;
  std::vector<DataExtent> data;
  for (const auto& t : m.tensors) {
    for (const auto& s : t.slices) {
      if (static_cast<std::size_t>(s.shard) != index) continue;
      if (s.at < 0) return file + ": the manifest gives no place ('at') for slice " + t.name;
      // Manifest::parse bounded count and dtype; shard_backing_problems bounded their sum.
      const auto bytes = checked::mul(s.count, dtype_bytes(t.dtype));
      if (!bytes) return file + ": slice " + t.name + " is larger than a file can be";
      data.push_back({s.at, *bytes});
    }
  }
  try {
    if (metadata_checksum(file, std::move(data)) == shard.metadata_checksum) return "";
  } catch (const IoError& e) {
    return e.what();
  }
  return file +
         ": its bytes outside the slices (HDF5 metadata, attributes, rank_state) do not "
         "match the manifest's metadata_checksum";
}

std::vector<std::string> verify_checkpoint(const std::string& step_dir) {
  std::vector<std::string> problems;
  const Manifest m = read_manifest(step_dir);
  std::map<int, ShardReader> readers;
  const auto backing = shard_backing_problems(m, step_dir);
  for (std::size_t i = 0; i < m.shards.size(); ++i) {
    const std::string file = step_dir + "/" + m.shards[i].file;
    if (!backing[i].empty()) {
      problems.push_back(backing[i]);
      continue;  // nothing of it is read
    }
    try {
      const std::int64_t bytes = io::file_bytes(file);
      if (bytes != m.shards[i].bytes) {
        problems.push_back(file + ": " + std::to_string(bytes) + " bytes, the manifest says " +
                           std::to_string(m.shards[i].bytes));
      }
      if (const auto problem = shard_metadata_problem(m, step_dir, i); !problem.empty()) {
        problems.push_back(problem);
        continue;  // HDF5 never parses a damaged header
      }
      readers.emplace(static_cast<int>(i), ShardReader(file));
    } catch (const IoError& e) {
      problems.push_back(e.what());
    }
  }
  std::vector<unsigned char> buffer;
  for (const auto& t : m.tensors) {
    const auto element = static_cast<std::size_t>(dtype_bytes(t.dtype));
    for (const auto& s : t.slices) {
      const auto reader = readers.find(s.shard);
      if (reader == readers.end()) continue;  // already reported
      const std::string file = step_dir + "/" + m.shards[static_cast<std::size_t>(s.shard)].file;
      try {
        buffer.resize(static_cast<std::size_t>(s.count) * element);
        reader->second.read(t.name, t.dtype, 0, s.count, buffer.data());
        if (io::bytes_checksum(buffer.data(), buffer.size()) != s.checksum) {
          problems.push_back(file + ": slice " + t.name + " does not match its checksum");
        }
      } catch (const IoError& e) {
        problems.push_back(e.what());
      }
    }
  }
  return problems;
}

}  // namespace cohort::ckpt
