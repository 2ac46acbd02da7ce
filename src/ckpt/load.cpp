#include <sys/mman.h>

#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "ckpt/files.hpp"
#include "cohort/ckpt/checkpoint.hpp"
#include "cohort/ckpt/inspect.hpp"
#include "cohort/ckpt/reader.hpp"
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

// A buffer the read will touch first, advised onto transparent huge pages where the kernel offers
// them on request (THP "madvise"): 2 MiB faults cost a fraction of 512 small ones (a 168 MB
// checkpoint: 41,000), which dominate a load into fresh memory, most of all in a VM.
void advise_huge_pages(const at::Tensor& buffer) {
  constexpr std::uintptr_t kHuge = 2u << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(buffer.data_ptr());
  const std::uintptr_t end = begin + static_cast<std::uintptr_t>(buffer.nbytes());
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1), last = end & ~(kHuge - 1);
  if (last > first) {  // advice only: a kernel without THP ignores it, and so do we
    ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
}

at::Tensor staging_buffer(const at::Tensor& like) {
  at::Tensor buffer = at::empty(
      like.sizes(), like.options().device(at::kCPU).memory_format(at::MemoryFormat::Contiguous));
  advise_huge_pages(buffer);
  return buffer;
}

// Reassembles every wanted tensor from the candidate into fresh buffers; throws IoError naming
// the file and the reason when anything is missing, different or corrupt.
std::vector<at::Tensor> read_all(CheckpointReader& reader, const std::vector<NamedTensor>& into,
                                 bool verify, const TensorSource& source) {
  const std::string& path = reader.path();
  std::vector<at::Tensor> result;
  for (const auto& want : into) {
    if (source) {
      at::Tensor buffer = at::empty(want.tensor.sizes(), want.tensor.options().device(at::kCPU));
      if (source(reader, want, buffer, verify)) {
        result.push_back(buffer);
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
    // Read into host memory; the caller's copy_ moves it onto the tensor's device. A fresh host
    // tensor is read into directly (NamedTensor::fresh).
    const bool direct = want.fresh && want.tensor.device().is_cpu() && want.tensor.is_contiguous();
    at::Tensor buffer = direct ? want.tensor : staging_buffer(want.tensor);
    if (direct) advise_huge_pages(buffer);  // not yet touched either
    if (want.part) {
      reader.read_range(*entry, want.part->offset, want.tensor.numel(), buffer.data_ptr(), verify);
    } else {
      reader.read(*entry, buffer.data_ptr(), verify);
    }
    result.push_back(buffer);
  }
  return result;
}

}  // namespace

std::optional<LoadedCheckpoint> load_latest(const std::string& dir, std::vector<NamedTensor>& into,
                                            comm::Communicator& comm, bool verify,
                                            std::FILE* warnings, const CandidateCheck& check,
                                            const TensorSource& source) {
  for (const auto& name : candidates(dir)) {
    const std::string path = dir + "/" + name;
    LoadedCheckpoint loaded;
    loaded.path = path;
    std::vector<at::Tensor> buffers;
    std::string reason;
    try {
      CheckpointReader reader(path);
      loaded.manifest = reader.manifest();
      buffers = read_all(reader, into, verify, source);
      if (loaded.manifest.world_size == comm.size()) {
        loaded.rank_state = reader.rank_state(comm.rank());
      }
      if (check) check(loaded, buffers);
    } catch (const IoError& e) {
      reason = e.what();
    }
    at::Tensor failed = at::zeros({1}, at::kLong);
    failed[0] = reason.empty() ? 0 : 1;
    comm.all_reduce(failed);  // a candidate is taken only when every rank could read it
    if (failed.item<std::int64_t>() == 0) {
      at::NoGradGuard no_grad;  // parameters are leaves that require grad
      for (std::size_t i = 0; i < into.size(); ++i) {
        if (!buffers[i].is_same(into[i].tensor)) into[i].tensor.copy_(buffers[i]);
      }
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
