#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <sstream>

#include <unistd.h>

#include "ckpt/files.hpp"
#include "cohort/ckpt/checkpoint.hpp"
#include "cohort/ckpt/shard_file.hpp"
#include "cohort/ckpt/shard_plan.hpp"
#include "cohort/comm/communicator.hpp"
#include "cohort/config.hpp"
#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/files.hpp"

namespace cohort::ckpt {
namespace {

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string shard_name(int rank, int world) {
  char name[64];
  std::snprintf(name, sizeof name, "shard-%05d-of-%05d.h5", rank, world);
  return name;
}

// What this rank holds of a plan's tensor, flat in host memory: elements [offset, offset +
// numel) of it (undefined values: none).
struct HeldFlat {
  at::Tensor values;
  std::int64_t offset = 0;
};

// This rank's shard: its slices of the flattened tensors.
WrittenShard write_own_shard(const std::string& path, const ShardPlan& plan,
                             const std::vector<HeldFlat>& flat, const SaveRequest& request,
                             int rank) {
  std::vector<ShardSlice> mine;
  for (const auto& s : plan.slices_of(rank)) {
    const TensorSpec& spec = plan.tensors()[s.tensor];
    const HeldFlat& held = flat[s.tensor];
    const auto* base = static_cast<const unsigned char*>(held.values.data_ptr());
    mine.push_back({spec.name, spec.dtype, spec.shape, s.offset, s.count,
                    base + (s.offset - held.offset) * spec.element_bytes});
  }
  return write_shard(path, {rank, plan.world(), request.step}, mine, request.rank_state);
}

// What every rank reports of its shard, summed over ranks (each fills its own entries):
// [slice checksums (n), shard sizes (world), failures (1), slice addresses (n), shard metadata
// checksums (world)].
struct SaveReport {
  std::size_t n;
  int world;
  std::size_t w() const { return static_cast<std::size_t>(world); }
  std::int64_t size() const { return static_cast<std::int64_t>(2 * n + 2 * w() + 1); }
  std::size_t checksum(std::size_t slice) const { return slice; }
  std::size_t bytes(int rank) const { return n + static_cast<std::size_t>(rank); }
  std::size_t failures() const { return n + w(); }
  std::size_t address(std::size_t slice) const { return n + w() + 1 + slice; }
  std::size_t metadata(int rank) const { return 2 * n + w() + 1 + static_cast<std::size_t>(rank); }
};

Manifest manifest_of(const SaveRequest& request, const ShardPlan& plan, int world,
                     const at::Tensor& sums) {
  Manifest m;
  m.step = request.step;
  m.epoch = request.epoch;
  m.samples_seen = request.samples_seen;
  m.world_size = world;
  m.nodes = request.nodes;
  m.config_hash = request.config_hash;
  m.cohort_version = COHORT_VERSION;
  m.created = utc_now();
  const auto* s = sums.data_ptr<std::int64_t>();
  const SaveReport report{plan.slices().size(), world};
  for (int r = 0; r < world; ++r) {
    m.shards.push_back({shard_name(r, world), r, s[report.bytes(r)],
                        io::format_checksum(static_cast<std::uint64_t>(s[report.metadata(r)]))});
  }
  for (const auto& spec : plan.tensors())
    m.tensors.push_back({spec.name, spec.dtype, spec.shape, {}});
  for (std::size_t i = 0; i < report.n; ++i) {
    const Slice& slice = plan.slices()[i];
    m.tensors[slice.tensor].slices.push_back(
        {slice.rank, slice.offset, slice.count,
         io::format_checksum(static_cast<std::uint64_t>(s[report.checksum(i)])),
         s[report.address(i)]});
  }
  return m;
}

// Rank 0's commit: manifest, rename, latest. Each step durable before the next.
void commit(const std::string& dir, const std::string& tmp, const std::string& final_dir,
            const Manifest& m) {
  write_file_synced(tmp + "/manifest.json", m.to_json());
  fsync_directory(tmp);
  // The same step saved again (a resumed run passes it a second time) replaces the earlier save;
  // a directory of that name that no save made is not a checkpoint, and is left alone.
  namespace fs = std::filesystem;
  std::error_code error;
  const auto there = fs::symlink_status(final_dir, error);
  if (fs::is_directory(there)) {
    COHORT_CHECK(is_checkpoint_directory(final_dir), IoError, final_dir,
                 ": not a checkpoint (no manifest.json, no shard), so not replaced: move it away");
    fs::remove_all(final_dir, error);
  } else if (fs::exists(there)) {
    COHORT_THROW(IoError, final_dir, ": ",
                 fs::is_symlink(there) ? "a symbolic link" : io::describe_path(final_dir),
                 " where a checkpoint goes, left alone: move it away");
  }
  rename_path(tmp, final_dir);
  fsync_directory(dir);
  // Through latest.tmp-<pid>, the name clean_partial() knows.
  io::write_file_atomically(dir + "/latest", step_dir_name(m.step) + "\n");
}

// A tensor as this rank holds it: the whole tensor's spec and the range held.
struct HeldSpec {
  TensorSpec spec;
  std::int64_t offset = 0;
  std::int64_t count = 0;
};

std::vector<HeldSpec> specs_of(const SaveRequest& request) {
  std::vector<HeldSpec> specs;
  for (const auto& t : request.tensors) {
    HeldSpec h{{t.name, dtype_name(t.tensor.scalar_type()),
                t.part ? t.part->shape : t.tensor.sizes().vec(),
                static_cast<std::int64_t>(t.tensor.element_size())},
               t.part ? t.part->offset : 0,
               t.tensor.numel()};
    COHORT_CHECK(!t.part || (h.offset >= 0 && h.offset <= h.spec.numel() - h.count), IoError,
                 "checkpoint: part [", h.offset, ", +", h.count, ") of tensor '", t.name,
                 "' lies outside its ", h.spec.numel(), " elements");
    specs.push_back(std::move(h));
  }
  return specs;
}

// "name dtype element_bytes d0,d1,... offset count\n" per tensor (names hold no spaces or
// newlines; an empty shape is "-").
std::string encode(const std::vector<HeldSpec>& specs) {
  std::ostringstream out;
  for (const auto& h : specs) {
    const TensorSpec& t = h.spec;
    out << t.name << ' ' << t.dtype << ' ' << t.element_bytes << ' ';
    for (std::size_t d = 0; d < t.shape.size(); ++d) out << (d ? "," : "") << t.shape[d];
    out << (t.shape.empty() ? "-" : "") << ' ' << h.offset << ' ' << h.count << '\n';
  }
  return out.str();
}

std::vector<HeldSpec> decode(const std::string& text) {
  std::vector<HeldSpec> specs;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    HeldSpec h;
    std::string shape;
    fields >> h.spec.name >> h.spec.dtype >> h.spec.element_bytes >> shape >> h.offset >> h.count;
    std::istringstream dims(shape == "-" ? "" : shape);
    for (std::string d; std::getline(dims, d, ',');) h.spec.shape.push_back(std::stoll(d));
    specs.push_back(std::move(h));
  }
  return specs;
}

// Every rank's text, in rank order: lengths by one all-reduce, then one padded all-gather of
// `*moved` bytes (to each rank).
std::vector<std::string> gather_text(const std::string& mine, comm::Communicator& comm,
                                     std::int64_t* moved = nullptr) {
  const int world = comm.size();
  at::Tensor lengths = at::zeros({world}, at::kLong);
  lengths[comm.rank()] = static_cast<std::int64_t>(mine.size());
  comm.all_reduce(lengths);
  const std::int64_t longest = std::max<std::int64_t>(1, lengths.max().item<std::int64_t>());
  at::Tensor own = at::zeros({longest}, at::kByte);
  std::memcpy(own.data_ptr(), mine.data(), mine.size());
  at::Tensor all = at::empty({longest * world}, at::kByte);
  comm.all_gather(all, own);
  if (moved != nullptr) *moved = longest * world;
  std::vector<std::string> texts;
  const auto* bytes = static_cast<const char*>(all.data_ptr());
  for (int r = 0; r < world; ++r) {
    texts.emplace_back(bytes + r * longest,
                       static_cast<std::size_t>(lengths[r].item<std::int64_t>()));
  }
  return texts;
}

// The request's tensors aligned with the plan's, flat and in host memory (a GPU's are copied):
// undefined where this rank holds none.
std::vector<HeldFlat> flat_by_plan(const SaveRequest& request, const ShardPlan& plan) {
  std::map<std::string, std::size_t> local;
  for (std::size_t i = 0; i < request.tensors.size(); ++i) local[request.tensors[i].name] = i;
  std::vector<HeldFlat> flat;
  for (const auto& spec : plan.tensors()) {
    const auto it = local.find(spec.name);
    if (it == local.end()) {
      flat.emplace_back();
      continue;
    }
    const NamedTensor& t = request.tensors[it->second];
    flat.push_back({t.tensor.to(at::kCPU).contiguous().reshape({-1}), t.part ? t.part->offset : 0});
  }
  return flat;
}

// Names this save attempt, the same on every rank: a requeued job never writes into a leftover.
std::string attempt_tag(const SaveRequest& request, comm::Communicator& comm) {
  at::Tensor pid = at::zeros({1}, at::kLong);
  pid[0] = static_cast<std::int64_t>(::getpid());
  comm.broadcast(pid, 0);  // every rank takes part, whichever name is used
  if (!request.attempt.empty()) return request.attempt;
  return std::to_string(pid.item<std::int64_t>());
}

}  // namespace

namespace {

ShardPlan plan_from(const SaveRequest& request, const std::vector<HeldSpec>& mine,
                    const std::string& text, comm::Communicator& comm, std::int64_t* moved) {
  const auto texts = gather_text(text, comm, moved);
  const bool whole = std::none_of(request.tensors.begin(), request.tensors.end(),
                                  [](const NamedTensor& t) { return t.part.has_value(); });
  if (whole &&
      std::all_of(texts.begin(), texts.end(), [&](const auto& t) { return t == texts.front(); })) {
    std::vector<TensorSpec> specs;
    for (const auto& h : mine) specs.push_back(h.spec);
    return ShardPlan::balanced(std::move(specs), comm.size());  // replicated: data parallelism
  }
  std::vector<TensorSpec> all;
  std::vector<std::vector<Holding>> holdings;
  std::map<std::string, std::size_t> index;
  for (int r = 0; r < comm.size(); ++r) {
    for (auto& held : decode(texts[static_cast<std::size_t>(r)])) {
      const TensorSpec& spec = held.spec;
      const auto [it, added] = index.emplace(spec.name, all.size());
      if (added) {
        all.push_back(spec);
        holdings.emplace_back();
      }
      const TensorSpec& first = all[it->second];
      COHORT_CHECK(first.dtype == spec.dtype && first.shape == spec.shape, IoError,
                   "checkpoint: tensor '", spec.name, "' differs between ranks (", first.dtype, " ",
                   c10::IntArrayRef(first.shape), " vs ", spec.dtype, " ",
                   c10::IntArrayRef(spec.shape), ")");
      holdings[it->second].push_back({r, held.offset, held.count});
    }
  }
  try {
    return ShardPlan::among_holdings(std::move(all), holdings, comm.size());
  } catch (const ConfigError& e) {  // the ranks' tensors do not make whole ones: not savable
    COHORT_THROW(IoError, e.what());
  }
}

}  // namespace

ShardPlan plan_checkpoint(const SaveRequest& request, comm::Communicator& comm) {
  const auto mine = specs_of(request);
  return plan_from(request, mine, encode(mine), comm, nullptr);
}

const ShardPlan& PlanCache::plan(const SaveRequest& request, comm::Communicator& comm) {
  const auto mine = specs_of(request);
  std::string layout = encode(mine);
  at::Tensor changed = at::zeros({1}, at::kLong);
  changed[0] = plan_ && layout == layout_ ? 0 : 1;
  comm.all_reduce(changed);  // sum: any rank's change replans everywhere
  last_gather_bytes_ = 0;
  if (changed.item<std::int64_t>() != 0) {
    plan_ = plan_from(request, mine, layout, comm, &last_gather_bytes_);
    layout_ = std::move(layout);
    ++plans_made_;
  }
  return *plan_;
}

SaveRequest snapshot_own_part(const SaveRequest& request, const ShardPlan& plan, int rank) {
  SaveRequest copy = request;
  std::map<std::string, std::size_t> local;
  for (std::size_t i = 0; i < copy.tensors.size(); ++i) {
    auto& t = copy.tensors[i];
    local[t.name] = i;
    t.tensor = at::empty(t.tensor.sizes(), t.tensor.options().device(at::kCPU).memory_format(
                                               at::MemoryFormat::Contiguous));  // host, as written
  }
  for (const auto& s : plan.slices_of(rank)) {
    const std::size_t i = local.at(plan.tensors()[s.tensor].name);
    const auto& part = request.tensors[i].part;
    const std::int64_t at = s.offset - (part ? part->offset : 0);  // in what this rank holds
    const at::Tensor from = request.tensors[i].tensor.contiguous().reshape({-1});
    copy.tensors[i].tensor.view({-1}).narrow(0, at, s.count).copy_(from.narrow(0, at, s.count));
  }
  return copy;
}

std::string save_checkpoint(const std::string& dir, const SaveRequest& request,
                            comm::Communicator& comm) {
  return save_checkpoint(dir, request, plan_checkpoint(request, comm), comm);
}

std::string save_checkpoint(const std::string& dir, const SaveRequest& request,
                            const ShardPlan& plan, comm::Communicator& comm) {
  const std::string tag = attempt_tag(request, comm);
  const int rank = comm.rank(), world = comm.size();
  const std::vector<HeldFlat> flat = flat_by_plan(request, plan);
  const std::string final_dir = dir + "/" + step_dir_name(request.step);
  const std::string tmp = final_dir + ".tmp-" + tag;
  const SaveReport report{plan.slices().size(), world};
  at::Tensor sums = at::zeros({report.size()}, at::kLong);
  std::string failure;
  try {
    io::make_directories(dir);
    io::make_shared_directory(tmp);  // a link planted at its name is never written through
    const std::string path = tmp + "/" + shard_name(rank, world);
    const WrittenShard mine = write_own_shard(path, plan, flat, request, rank);
    auto* s = sums.data_ptr<std::int64_t>();
    std::size_t k = 0;
    for (std::size_t i = 0; i < report.n; ++i) {
      if (plan.slices()[i].rank != rank) continue;
      s[report.checksum(i)] = static_cast<std::int64_t>(parse_checksum(mine.checksums[k]));
      s[report.address(i)] = mine.addresses[k++];
    }
    s[report.bytes(rank)] = io::file_bytes(path);
    s[report.metadata(rank)] = static_cast<std::int64_t>(parse_checksum(mine.metadata_checksum));
  } catch (const IoError& e) {
    failure = e.what();
    sums.data_ptr<std::int64_t>()[report.failures()] = 1;
  }
  comm.all_reduce(sums);  // also the barrier: every shard is on disk after it
  COHORT_CHECK(failure.empty(), IoError, "checkpoint step ", request.step, ": ", failure);
  COHORT_CHECK(sums.data_ptr<std::int64_t>()[report.failures()] == 0, IoError, "checkpoint step ",
               request.step, ": another rank could not write its shard");
  // Rank 0 commits; the others wait for its verdict (a failure must not leave them waiting).
  at::Tensor committed = at::zeros({1}, at::kLong);
  if (rank == 0) {
    try {
      commit(dir, tmp, final_dir, manifest_of(request, plan, world, sums));
    } catch (const IoError& e) {
      failure = e.what();
      committed[0] = 1;
    }
  }
  comm.all_reduce(committed);
  COHORT_CHECK(failure.empty(), IoError, "checkpoint step ", request.step, ": ", failure);
  COHORT_CHECK(committed.item<std::int64_t>() == 0, IoError, "checkpoint step ", request.step,
               ": rank 0 could not commit it");
  return final_dir;
}

int clean_partial(const std::string& dir) {
  int removed = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (!is_partial_save_name(entry.path().filename().string())) continue;
    if (std::filesystem::remove_all(entry.path(), error) > 0) ++removed;
  }
  return removed;
}

}  // namespace cohort::ckpt
