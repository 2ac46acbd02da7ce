#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "ckpt/files.hpp"
#include "ckpt/staging.hpp"
#include "cohort/ckpt/checkpoint.hpp"
#include "cohort/ckpt/inspect.hpp"
#include "cohort/ckpt/reader.hpp"
#include "cohort/comm/communicator.hpp"
#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"

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

// Which slices of the wanted tensors read whole this rank matches to their checksums. Shared by
// the node's ranks (every rank wants the same tensors), the candidate's slices in reading order
// are cut into node_size runs of about equal bytes, run r checked by node rank r: a slice goes to
// the run that holds its middle byte.
struct CheckShare {
  bool verify = true;
  bool shared = false;
  int node_rank = 0, node_size = 1;
  std::vector<std::vector<bool>> mine;  // shared: [wanted tensor][slice] this rank checks

  void plan(const Manifest& manifest, const std::vector<NamedTensor>& into) {
    mine.assign(into.size(), {});
    if (!verify || !shared) return;
    const auto whole = [&](std::size_t i) {
      return into[i].part ? nullptr : manifest.find(into[i].name);
    };
    long double total = 0;  // the manifest's sizes may be large: no integer product below
    for (std::size_t i = 0; i < into.size(); ++i) {
      if (const TensorEntry* entry = whole(i)) {
        total += static_cast<long double>(entry->numel()) * dtype_bytes(entry->dtype);
      }
    }
    long double at = 0;
    for (std::size_t i = 0; i < into.size() && total > 0; ++i) {
      const TensorEntry* entry = whole(i);
      if (entry == nullptr) continue;
      for (const auto& slice : entry->slices) {
        const long double bytes = static_cast<long double>(slice.count) * dtype_bytes(entry->dtype);
        const long double run = (at + bytes / 2) * node_size / total;  // in [0, node_size)
        mine[i].push_back(static_cast<int>(std::min<long double>(run, node_size - 1)) == node_rank);
        at += bytes;
      }
    }
  }
  // Tensor i's slice k, read whole: checked here? (Anything the plan did not cover is.)
  bool checks(std::size_t i, std::size_t k) const {
    if (!verify || !shared) return verify;
    return i >= mine.size() || k >= mine[i].size() || mine[i][k];
  }
};

// Equal on two ranks that want the same tensors (names, dtypes, shapes, parts): the XXH3 of their
// description, kept to 62 bits so that it and its negation fit an int64.
std::int64_t wanted_fingerprint(const std::vector<NamedTensor>& into) {
  io::StreamingChecksum sum;
  const auto add_number = [&sum](std::int64_t v) { sum.add(&v, sizeof v); };
  for (const auto& want : into) {
    sum.add(want.name.c_str(), want.name.size() + 1);
    add_number(static_cast<std::int64_t>(want.tensor.scalar_type()));
    for (const auto d : want.tensor.sizes()) add_number(d);
    add_number(want.part ? want.part->offset : -1);
    if (want.part) {
      for (const auto d : want.part->shape) add_number(d);
    }
  }
  return static_cast<std::int64_t>(io::parse_checksum(sum.result()) >> 2);
}

// Collective: whether the ranks may share the checks. One all-reduce of two numbers; a rank
// whose tensors differ from another's (pipeline stages, tensor-parallel or ZeRO parts) makes
// every rank check every slice it reads, as without sharing.
CheckShare share_checks(const std::vector<NamedTensor>& into, comm::Communicator& comm,
                        const LoadOptions& options) {
  CheckShare share;
  share.verify = options.verify;
  share.node_rank = options.node_rank;
  share.node_size = options.node_size;
  if (!options.verify || comm.size() == 1) return share;
  const std::int64_t mine = wanted_fingerprint(into);
  at::Tensor range = at::tensor({mine, -mine}, at::kLong);
  comm.all_reduce(range, {comm::ReduceOp::kMax});
  const auto* r = range.data_ptr<std::int64_t>();
  share.shared = r[0] == -r[1] && options.node_size > 1 && options.node_rank >= 0 &&
                 options.node_rank < options.node_size;
  return share;
}

// Reads every wanted tensor of the candidate where `staging` says; throws IoError naming
// the file and the reason when anything is missing, different or corrupt.
void read_all(CheckpointReader& reader, const std::vector<NamedTensor>& into,
              const CheckShare& share, const TensorSource& source, Staging& staging) {
  const std::string& path = reader.path();
  for (std::size_t i = 0; i < into.size(); ++i) {
    const NamedTensor& want = into[i];
    if (source) {
      at::Tensor buffer = at::empty(want.tensor.sizes(), want.tensor.options().device(at::kCPU));
      if (source(reader, want, buffer, share.verify)) {
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
      reader.read_range(*entry, want.part->offset, want.tensor.numel(), buffer.data_ptr(),
                        share.verify);
    } else {
      reader.read(*entry, buffer.data_ptr(), [&](std::size_t k) { return share.checks(i, k); });
    }
  }
}

// Collective: the lowest rank that could not take the candidate (`reason` not empty), or
// comm.size() when every rank could. One all-reduce.
int first_failed_rank(const std::string& reason, comm::Communicator& comm) {
  at::Tensor rank = at::tensor(
      {static_cast<std::int64_t>(reason.empty() ? comm.size() : comm.rank())}, at::kLong);
  comm.all_reduce(rank, {comm::ReduceOp::kMin});
  return static_cast<int>(rank.item<std::int64_t>());
}

}  // namespace

std::optional<LoadedCheckpoint> load_latest(const std::string& dir, std::vector<NamedTensor>& into,
                                            comm::Communicator& comm, const LoadOptions& options) {
  const auto candidates = checkpoint_candidates(dir);
  if (candidates.empty()) return std::nullopt;  // the same on every rank: one directory
  CheckShare share = share_checks(into, comm, options);
  for (const auto& name : candidates) {
    const std::string path = dir + "/" + name;
    LoadedCheckpoint loaded;
    loaded.path = path;
    Staging staging(into);
    std::string reason;
    try {
      CheckpointReader reader(path);
      loaded.manifest = reader.manifest();
      share.plan(loaded.manifest, into);
      read_all(reader, into, share, options.source, staging);
      loaded.checked_bytes = reader.checked_bytes();
      if (loaded.manifest.world_size == comm.size()) {
        loaded.rank_state = reader.rank_state(comm.rank());
      }
      if (options.check) options.check(loaded, staging.buffers());
    } catch (const IoError& e) {
      reason = e.what();
    }
    // A candidate is taken only when every rank could read it (and, sharing the checks, when
    // every slice checked on this node matched): until then no wanted tensor was touched.
    const int failed = first_failed_rank(reason, comm);
    if (failed == comm.size()) {
      staging.commit(into);
      return loaded;
    }
    if (options.warnings != nullptr && comm.rank() == failed) {
      std::fprintf(options.warnings, "cohort: warning: skipping checkpoint %s: %s\n", path.c_str(),
                   reason.c_str());
      std::fflush(options.warnings);
    }
  }
  return std::nullopt;
}

}  // namespace cohort::ckpt
