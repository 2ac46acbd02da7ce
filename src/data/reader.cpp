#include "cohort/data/reader.hpp"

#include <ATen/Context.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

#include "cohort/error.hpp"
#include "data/convert.hpp"
#include "data/h5/file.hpp"
#include "data/h5/mpio.hpp"

namespace cohort::data {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Shard {
  std::string path;
  std::int64_t first = 0;  // global index of its first sample
  std::int64_t samples = 0;
  h5::Hid file;
  h5::Hid inputs;  // or /tokens
  h5::Hid targets;
};

}  // namespace

IoDriver parse_io_driver(const std::string& name) {
  if (name == "posix") return IoDriver::kPosix;
  if (name == "mpio") return IoDriver::kMpiIo;
  COHORT_THROW(UsageError, "unknown I/O driver '", name, "' (posix, mpio)");
}

struct BatchReader::Impl {
  DatasetInfo info;
  ReaderOptions options;
  std::optional<h5::MpioAccess> mpio;
  std::vector<Shard> shards;
  ReadStats stats;

  hid_t transfer() const { return mpio ? mpio->transfer() : H5P_DEFAULT; }
  void read_sample_rows(const Shard& shard, ShardRead& read);
  void read_token_rows(const Shard& shard, ShardRead& read);
};

BatchReader::BatchReader(const std::string& path, ReaderOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->info = describe(path);
  impl_->options = options;
  if (options.driver == IoDriver::kMpiIo) {
    COHORT_CHECK(options.session != nullptr, UsageError,
                 "the MPI-IO driver needs an MPI session (run under a launcher)");
    impl_->mpio.emplace(*options.session);
  }
  const hid_t fapl = impl_->mpio ? impl_->mpio->file_access() : H5P_DEFAULT;
  std::int64_t first = 0;
  for (const auto& info : impl_->info.shards) {
    Shard shard;
    shard.path = info.path;
    shard.first = first;
    shard.samples = info.samples;
    shard.file = h5::open_file(info.path, fapl);
    if (impl_->info.kind == DatasetKind::kTokens) {
      shard.inputs = h5::open_dataset(shard.file.get(), "/tokens", info.path);
    } else {
      shard.inputs = h5::open_dataset(shard.file.get(), "/inputs", info.path);
      shard.targets = h5::open_dataset(shard.file.get(), "/targets", info.path);
    }
    first += info.samples;
    impl_->shards.push_back(std::move(shard));
  }
}

BatchReader::~BatchReader() = default;

const DatasetInfo& BatchReader::info() const { return impl_->info; }
const ReadStats& BatchReader::stats() const { return impl_->stats; }

void BatchReader::Impl::read_sample_rows(const Shard& shard, ShardRead& read) {
  const auto runs = h5::coalesce(read.rows);
  const std::size_t in_row = info.sample_bytes();
  std::size_t target_row = dtype_size(info.target_dtype);
  for (auto d : info.target_shape) target_row *= static_cast<std::size_t>(d);
  read.inputs.resize(read.rows.size() * in_row);
  read.targets.resize(read.rows.size() * target_row);
  h5::read_runs(shard.inputs.get(), runs, info.input_dtype, read.inputs.data(), transfer(),
                shard.path + ": dataset '/inputs'");
  h5::read_runs(shard.targets.get(), runs, info.target_dtype, read.targets.data(), transfer(),
                shard.path + ": dataset '/targets'");
  stats.runs += static_cast<std::int64_t>(runs.size());
  stats.bytes += static_cast<std::int64_t>(read.inputs.size() + read.targets.size());
}

void BatchReader::Impl::read_token_rows(const Shard& shard, ShardRead& read) {
  // Sample i is tokens [i*L, i*L + L + 1); a run of samples is one run of tokens.
  const std::int64_t length = info.seq_len;
  std::vector<h5::Run> token_runs;
  std::int64_t tokens = 0;
  for (const auto& run : h5::coalesce(read.rows)) {
    for (std::int64_t i = 0; i < run.count; ++i) read.token_offsets.push_back(tokens + i * length);
    token_runs.push_back(h5::Run{run.first * length, run.count * length + 1});
    tokens += run.count * length + 1;
  }
  read.inputs.resize(static_cast<std::size_t>(tokens) * sizeof(std::int64_t));
  h5::read_runs(shard.inputs.get(), token_runs, DType::kInt64, read.inputs.data(), transfer(),
                shard.path + ": dataset '/tokens'");
  stats.runs += static_cast<std::int64_t>(token_runs.size());
  stats.bytes += tokens * static_cast<std::int64_t>(dtype_size(info.input_dtype));
}

Batch BatchReader::read(const std::vector<std::int64_t>& indices, std::int64_t epoch) {
  auto& im = *impl_;
  const auto start = Clock::now();
  // Which shard and row each requested index is.
  std::vector<std::pair<std::size_t, std::int64_t>> where(indices.size());
  std::vector<ShardRead> reads(im.shards.size());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const std::int64_t index = indices[i];
    COHORT_CHECK(index >= 0 && index < im.info.num_samples, UsageError, im.info.path,
                 ": sample index ", index, " outside 0..", im.info.num_samples - 1);
    const auto it = std::upper_bound(im.shards.begin(), im.shards.end(), index,
                                     [](std::int64_t v, const Shard& s) { return v < s.first; });
    const auto shard = static_cast<std::size_t>(it - im.shards.begin()) - 1;
    where[i] = {shard, index - im.shards[shard].first};
    reads[shard].rows.push_back(where[i].second);
  }
  // Every shard takes part, even with nothing to read: collective MPI-IO needs every rank in
  // every H5Dread.
  for (std::size_t s = 0; s < im.shards.size(); ++s) {
    auto& rows = reads[s].rows;
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    if (im.info.kind == DatasetKind::kTokens) {
      im.read_token_rows(im.shards[s], reads[s]);
    } else {
      im.read_sample_rows(im.shards[s], reads[s]);
    }
  }
  const auto converted = Clock::now();
  im.stats.read_seconds += std::chrono::duration<double>(converted - start).count();
  Batch batch = assemble(im.info, im.options, reads, where, epoch, indices);
  im.stats.convert_seconds += seconds_since(converted);
  im.stats.batches += 1;
  im.stats.samples += static_cast<std::int64_t>(indices.size());
  return batch;
}

}  // namespace cohort::data
