#include "cohort/data/reader.hpp"

#include <ATen/Context.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>

#include "cohort/error.hpp"
#include "cohort/io/unique_fd.hpp"
#include "data/convert.hpp"
#include "data/field_read.hpp"
#include "data/mpio_access.hpp"
#include "io/h5/file.hpp"
#include "io/h5/row_locator.hpp"

namespace cohort::data {
namespace h5 = io::h5;
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
  // The pread path (POSIX driver, qualifying layouts only).
  UniqueFd fd;
  std::optional<h5::RowLocator> input_rows, target_rows;
  // Field datasets: per field, the dataset read (fixed: itself; ragged: its values).
  std::vector<h5::Hid> fields;
  std::vector<std::optional<h5::RowLocator>> field_rows;
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
  std::optional<MpioAccess> mpio;
  std::vector<Shard> shards;
  ReadStats stats;
  BufferPool pool;  // batch and staging buffers, recycled once released

  hid_t transfer() const { return mpio ? mpio->transfer() : H5P_DEFAULT; }
  bool combined() const { return mpio.has_value(); }  // collective: one H5Dread per dataset
  void read_rows(const Shard& shard, hid_t dataset, const std::optional<h5::RowLocator>& rows,
                 const std::vector<h5::Run>& runs, DType dtype, void* out, const char* name) {
    const std::string where = shard.path + ": dataset '" + name + "'";
    if (rows) {
      rows->read(shard.fd.get(), runs, out, where);
      stats.pread_runs += static_cast<std::int64_t>(runs.size());
    } else {
      h5::read_runs(dataset, runs, dtype, out, transfer(), combined(), where);
    }
  }
  void read_sample_rows(const Shard& shard, ShardRead& read);
  void read_token_rows(const Shard& shard, ShardRead& read);
  void open_fields(Shard& shard);
  Batch read_fields(const std::vector<ShardRead>& reads,
                    const std::vector<std::pair<std::size_t, std::int64_t>>& where);
};

BatchReader::BatchReader(const std::string& path, ReaderOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->info = describe(path);
  if (!options.target.empty()) select_target(impl_->info, options.target);
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
    if (impl_->info.kind == DatasetKind::kFields) {
      impl_->open_fields(shard);
      first += info.samples;
      impl_->shards.push_back(std::move(shard));
      continue;
    }
    if (impl_->info.kind == DatasetKind::kTokens) {
      shard.inputs = h5::open_dataset(shard.file.get(), "/tokens", info.path);
    } else {
      shard.inputs = h5::open_dataset(shard.file.get(), "/inputs", info.path);
      shard.targets = h5::open_dataset(shard.file.get(), "/targets", info.path);
    }
    if (options.pread_rows && !impl_->mpio) {
      const bool tokens = impl_->info.kind == DatasetKind::kTokens;
      shard.input_rows =
          h5::RowLocator::build(shard.inputs.get(), impl_->info.input_dtype, info.path);
      if (!tokens) {
        shard.target_rows =
            h5::RowLocator::build(shard.targets.get(), impl_->info.target_dtype, info.path);
      }
      if (shard.input_rows || shard.target_rows) {
        shard.fd = UniqueFd::open_read_only(info.path);
      }
    }
    first += info.samples;
    impl_->shards.push_back(std::move(shard));
  }
}

BatchReader::~BatchReader() = default;

void BatchReader::Impl::open_fields(Shard& shard) {
  // Per batch in flight: a staging buffer and an output per field, and masks: room for the
  // prefetched batches, the one being used and the one being read.
  if (shards.empty())
    pool = BufferPool(std::max<std::size_t>(12, 6 * (2 * info.fields.size() + 1)));
  bool any_rows = false;
  for (const auto& field : info.fields) {
    const std::string name = field.ragged ? field.location + "/values" : field.location;
    shard.fields.push_back(h5::open_dataset(shard.file.get(), name, shard.path));
    std::optional<h5::RowLocator> rows;
    if (options.pread_rows && !mpio) {
      rows = h5::RowLocator::build(shard.fields.back().get(), field.dtype, shard.path);
      any_rows = any_rows || rows.has_value();
    }
    shard.field_rows.push_back(std::move(rows));
  }
  if (any_rows) shard.fd = UniqueFd::open_read_only(shard.path);
}

Batch BatchReader::Impl::read_fields(
    const std::vector<ShardRead>& reads,
    const std::vector<std::pair<std::size_t, std::int64_t>>& where) {
  const auto read_runs = [this](std::size_t f, std::size_t s, const std::vector<h5::Run>& runs,
                                void* out) {
    const Shard& shard = shards[s];
    const auto& field = info.fields[f];
    const std::string location = field.ragged ? field.location + "/values" : field.location;
    read_rows(shard, shard.fields[f].get(), shard.field_rows[f], runs, info.fields[f].dtype, out,
              location.c_str());
  };
  return read_field_batch(info, options, pool, reads, where, read_runs, stats);
}

const DatasetInfo& BatchReader::info() const { return impl_->info; }
const ReadStats& BatchReader::stats() const { return impl_->stats; }

void BatchReader::Impl::read_sample_rows(const Shard& shard, ShardRead& read) {
  const auto runs = h5::coalesce(read.rows);
  const std::size_t in_row = info.sample_bytes();
  std::size_t target_row = dtype_size(info.target_dtype);
  for (auto d : info.target_shape) target_row *= static_cast<std::size_t>(d);
  // (On the direct path the buffers are already the batch's tensors.)
  if (!read.inputs.defined()) read.inputs = pool.bytes(read.rows.size() * in_row);
  if (!read.targets.defined()) read.targets = pool.bytes(read.rows.size() * target_row);
  read_rows(shard, shard.inputs.get(), shard.input_rows, runs, info.input_dtype,
            read.inputs.data_ptr(), "/inputs");
  read_rows(shard, shard.targets.get(), shard.target_rows, runs, info.target_dtype,
            read.targets.data_ptr(), "/targets");
  if (info.classes > 0 && info.target_dtype == DType::kInt64) {
    // Labels come from the file: out of range, the loss would stop with LibTorch's backtrace.
    const auto* label = static_cast<const std::int64_t*>(read.targets.data_ptr());
    const std::size_t n = read.rows.size() * (target_row / sizeof(std::int64_t));
    for (std::size_t i = 0; i < n; ++i) {
      COHORT_CHECK(label[i] >= 0 && label[i] < info.classes, IoError, shard.path,
                   ": dataset '/targets': class target ", label[i], " is outside 0..",
                   info.classes - 1, " (attribute 'classes')");
    }
  }
  stats.runs += static_cast<std::int64_t>(runs.size());
  stats.bytes += static_cast<std::int64_t>(read.rows.size() * (in_row + target_row));
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
  read.inputs = pool.empty({tokens}, at::TensorOptions().dtype(at::kLong));
  auto* wide = read.inputs.data_ptr<std::int64_t>();
  if (shard.input_rows) {
    // pread the stored uint16/int32 tokens, then widen.
    const at::Tensor stored =
        pool.bytes(static_cast<std::size_t>(tokens) * dtype_size(info.input_dtype));
    read_rows(shard, shard.inputs.get(), shard.input_rows, token_runs, info.input_dtype,
              stored.data_ptr(), "/tokens");
    const void* narrow = stored.data_ptr();
    for (std::int64_t t = 0; t < tokens; ++t) {
      wide[t] = info.input_dtype == DType::kUInt16 ? static_cast<const std::uint16_t*>(narrow)[t]
                                                   : static_cast<const std::int32_t*>(narrow)[t];
    }
  } else {
    h5::read_runs(shard.inputs.get(), token_runs, DType::kInt64, wide, transfer(), combined(),
                  shard.path + ": dataset '/tokens'");
  }
  // Tokens index the model's embedding: one beyond the vocabulary (or a negative int32) would
  // stop the forward with LibTorch's backtrace.
  const std::int64_t vocab = info.vocab_size > 0 ? info.vocab_size : INT64_MAX;
  for (std::int64_t t = 0; t < tokens; ++t) {
    COHORT_CHECK(wide[t] >= 0 && wide[t] < vocab, IoError, shard.path,
                 ": dataset '/tokens': token ", wide[t],
                 " is outside the vocabulary (attribute 'vocab_size' = ", info.vocab_size, ")");
  }
  stats.runs += static_cast<std::int64_t>(token_runs.size());
  stats.bytes += tokens * static_cast<std::int64_t>(dtype_size(info.input_dtype));
}

Batch BatchReader::read(const std::vector<std::int64_t>& indices, std::int64_t epoch) {
  auto& im = *impl_;
  const auto start = Clock::now();
  // Which shard and row each requested index is.
  std::vector<std::pair<std::size_t, std::int64_t>> where(indices.size());
  std::vector<ShardRead> reads(im.shards.size());
  std::size_t shard = 0;  // the previous index's: consecutive indices mostly share a shard
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const std::int64_t index = indices[i];
    COHORT_CHECK(index >= 0 && index < im.info.num_samples, UsageError, im.info.path,
                 ": sample index ", index, " outside 0..", im.info.num_samples - 1);
    const Shard& last = im.shards[shard];
    if (index < last.first || index >= last.first + last.samples) {
      const auto it = std::upper_bound(im.shards.begin(), im.shards.end(), index,
                                       [](std::int64_t v, const Shard& s) { return v < s.first; });
      shard = static_cast<std::size_t>(it - im.shards.begin()) - 1;
    }
    where[i] = {shard, index - im.shards[shard].first};
    reads[shard].rows.push_back(where[i].second);
  }
  // Increasing indices within one shard (contiguous or evaluation order) are read straight into
  // the batch when no conversion is due: no staging buffer, no copy.
  const bool increasing = std::adjacent_find(indices.begin(), indices.end(),
                                             std::greater_equal<std::int64_t>()) == indices.end();
  for (auto& read : reads) {   // each shard's rows sorted and unique: the order they are read in
    if (increasing) continue;  // already
    std::sort(read.rows.begin(), read.rows.end());
    read.rows.erase(std::unique(read.rows.begin(), read.rows.end()), read.rows.end());
  }
  if (im.info.kind == DatasetKind::kFields) {
    Batch batch = im.read_fields(reads, where);
    batch.epoch = epoch;
    im.stats.read_seconds += seconds_since(start);
    im.stats.batches += 1;
    im.stats.samples += static_cast<std::int64_t>(indices.size());
    return batch;
  }
  std::optional<Batch> direct;
  if (!indices.empty() && increasing && where.front().first == where.back().first &&
      direct_eligible(im.info, im.options)) {
    direct =
        allocate_stored(im.info, im.options, static_cast<std::int64_t>(indices.size()), im.pool);
    reads[where.front().first].inputs = direct->inputs;
    reads[where.front().first].targets = direct->targets;
  }
  // Every shard takes part, even with nothing to read: collective MPI-IO needs every rank in
  // every H5Dread.
  for (std::size_t s = 0; s < im.shards.size(); ++s) {
    if (im.info.kind == DatasetKind::kTokens) {
      im.read_token_rows(im.shards[s], reads[s]);
    } else {
      im.read_sample_rows(im.shards[s], reads[s]);
    }
  }
  const auto converted = Clock::now();
  im.stats.read_seconds += std::chrono::duration<double>(converted - start).count();
  Batch batch = direct ? std::move(*direct)
                       : assemble(im.info, im.options, im.pool, reads, where, epoch, indices);
  batch.epoch = epoch;
  im.stats.convert_seconds += seconds_since(converted);
  im.stats.batches += 1;
  im.stats.samples += static_cast<std::int64_t>(indices.size());
  return batch;
}

}  // namespace cohort::data
