#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <filesystem>

#include "ckpt/files.hpp"
#include "ckpt/staging.hpp"
#include "cohort/ckpt/checkpoint.hpp"
#include "cohort/ckpt/inspect.hpp"
#include "cohort/ckpt/reader.hpp"
#include "cohort/comm/communicator.hpp"
#include "cohort/error.hpp"

namespace cohort::ckpt {

std::vector<std::string> checkpoint_candidates(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (parse_step_dir_name(name) && entry.is_directory(error)) {
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

namespace {

// Reads every wanted tensor of the candidate where `staging` says; throws IoError naming
// the file and the reason when anything is missing, different or corrupt.
void read_all(CheckpointReader& reader, const std::vector<NamedTensor>& into, bool verify,
              const TensorSource& source, Staging& staging) {
  const std::string& path = reader.path();
  for (std::size_t i = 0; i < into.size(); ++i) {
    const NamedTensor& want = into[i];
    if (source) {
      at::Tensor buffer = at::empty(want.tensor.sizes(), want.tensor.options().device(at::kCPU));
      if (source(reader, want, buffer, verify)) {
        staging.replace(i, buffer);
        continue;
      }
    }
    const TensorEntry* entry = reader.manifest().find(want.name);
    COHORT_CHECK(entry != nullptr, IoError, path, "/manifest.json: no tensor '", want.name, "'");
    const std::string dtype = dtype_name(want.tensor.scalar_type());
    const std::vector<std::int64_t> shape =
        want.part ? want.part->shape : want.tensor.sizes().vec();
    COHORT_CHECK(entry->dtype == dtype && entry->shape == shape, IoError, path,
                 "/manifest.json: tensor '", want.name, "' is ", entry->dtype, " ",
                 c10::IntArrayRef(entry->shape), ", wanted ", dtype, " ", c10::IntArrayRef(shape));
    const at::Tensor& buffer = staging.buffer(i);  // host memory (staging.hpp)
    if (want.part) {
      reader.read_range(*entry, want.part->offset, want.tensor.numel(), buffer.data_ptr(), verify);
    } else {
      reader.read(*entry, buffer.data_ptr(), verify);
    }
  }
}

}  // namespace

std::optional<LoadedCheckpoint> load_latest(const std::string& dir, std::vector<NamedTensor>& into,
                                            comm::Communicator& comm, bool verify,
                                            std::FILE* warnings, const CandidateCheck& check,
                                            const TensorSource& source) {
  for (const auto& name : checkpoint_candidates(dir)) {
    const std::string path = dir + "/" + name;
    LoadedCheckpoint loaded;
    loaded.path = path;
    Staging staging(into);
    std::string reason;
    try {
      CheckpointReader reader(path);
      loaded.manifest = reader.manifest();
      read_all(reader, into, verify, source, staging);
      if (loaded.manifest.world_size == comm.size()) {
        loaded.rank_state = reader.rank_state(comm.rank());
      }
      if (check) check(loaded, staging.buffers());
    } catch (const IoError& e) {
      reason = e.what();
    }
    at::Tensor failed = at::zeros({1}, at::kLong);
    failed[0] = reason.empty() ? 0 : 1;
    comm.all_reduce(failed);  // a candidate is taken only when every rank could read it
    if (failed.item<std::int64_t>() == 0) {
      staging.commit(into);
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
