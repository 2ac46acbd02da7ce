#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "ckpt/files.hpp"
#include "cohort/ckpt/checkpoint.hpp"
#include "cohort/ckpt/inspect.hpp"
#include "cohort/ckpt/shard_file.hpp"
#include "cohort/comm/communicator.hpp"
#include "cohort/error.hpp"

namespace cohort::ckpt {
namespace {

// Step directories to try, newest first: the one `latest` names, then the others by step.
std::vector<std::string> candidates(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step-", 0) == 0 && name.find('.') == std::string::npos &&
        entry.is_directory(error)) {
      names.push_back(name);
    }
  }
  std::sort(names.rbegin(), names.rend());  // fixed-width step numbers sort by step
  try {
    const std::string latest = read_latest(dir);
    const auto at = std::find(names.begin(), names.end(), latest);
    if (at != names.end()) std::rotate(names.begin(), at, at + 1);
  } catch (const IoError&) {
    // No readable `latest` (first run, or lost): the directories alone decide.
  }
  return names;
}

// Reassembles every wanted tensor from the candidate at `path` into fresh buffers; throws
// IoError naming the file and the reason when anything is missing, different or corrupt.
std::vector<at::Tensor> read_all(const std::string& path, const Manifest& m,
                                 const std::vector<NamedTensor>& into, bool verify) {
  std::map<int, ShardReader> readers;
  std::vector<at::Tensor> result;
  for (const auto& want : into) {
    const TensorEntry* entry = m.find(want.name);
    COHORT_CHECK(entry != nullptr, IoError, path, "/manifest.json: no tensor '", want.name, "'");
    const std::string dtype = dtype_name(want.tensor.scalar_type());
    COHORT_CHECK(entry->dtype == dtype && entry->shape == want.tensor.sizes().vec(), IoError, path,
                 "/manifest.json: tensor '", want.name, "' is ", entry->dtype, " ",
                 c10::IntArrayRef(entry->shape), ", wanted ", dtype, " ", want.tensor.sizes());
    at::Tensor buffer = at::empty(
        want.tensor.sizes(), want.tensor.options().memory_format(at::MemoryFormat::Contiguous));
    auto* base = static_cast<unsigned char*>(buffer.data_ptr());
    const auto element = static_cast<std::int64_t>(buffer.element_size());
    for (const auto& slice : entry->slices) {
      const ShardEntry& shard = m.shards.at(static_cast<std::size_t>(slice.shard));
      auto reader = readers.find(slice.shard);
      if (reader == readers.end()) {
        reader = readers.emplace(slice.shard, ShardReader(path + "/" + shard.file)).first;
      }
      const std::string file = path + "/" + shard.file;
      COHORT_CHECK(reader->second.slice_offset(want.name) == slice.offset, IoError, file,
                   ": slice ", want.name, " does not start where the manifest says");
      void* out = base + slice.offset * element;
      reader->second.read(want.name, dtype, 0, slice.count, out);
      COHORT_CHECK(!verify || bytes_checksum(out, static_cast<std::size_t>(
                                                      slice.count * element)) == slice.checksum,
                   IoError, file, ": slice ", want.name, " does not match its checksum");
    }
    result.push_back(buffer);
  }
  return result;
}

}  // namespace

std::optional<LoadedCheckpoint> load_latest(const std::string& dir, std::vector<NamedTensor>& into,
                                            comm::Communicator& comm, bool verify,
                                            std::FILE* warnings) {
  for (const auto& name : candidates(dir)) {
    const std::string path = dir + "/" + name;
    LoadedCheckpoint loaded;
    loaded.path = path;
    std::vector<at::Tensor> buffers;
    std::string reason;
    try {
      loaded.manifest = read_manifest(path);
      buffers = read_all(path, loaded.manifest, into, verify);
      if (loaded.manifest.world_size == comm.size()) {
        for (const auto& shard : loaded.manifest.shards) {
          if (shard.rank == comm.rank()) {
            loaded.rank_state = ShardReader(path + "/" + shard.file).rank_state();
          }
        }
      }
    } catch (const IoError& e) {
      reason = e.what();
    }
    at::Tensor failed = at::zeros({1}, at::kLong);
    failed[0] = reason.empty() ? 0 : 1;
    comm.all_reduce(failed);  // a candidate is taken only when every rank could read it
    if (failed.item<std::int64_t>() == 0) {
      at::NoGradGuard no_grad;  // parameters are leaves that require grad
      for (std::size_t i = 0; i < into.size(); ++i) into[i].tensor.copy_(buffers[i]);
      return loaded;
    }
    if (warnings != nullptr && comm.rank() == 0) {
      std::fprintf(warnings, "cohort: warning: skipping checkpoint %s: %s\n", path.c_str(),
                   reason.empty() ? "another rank could not read it" : reason.c_str());
      std::fflush(warnings);
    }
  }
  return std::nullopt;
}

}  // namespace cohort::ckpt
