#include "data/field_read.hpp"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "cohort/error.hpp"
#include "common/checked_math.hpp"
#include "data/normalize.hpp"

namespace cohort::data {
namespace h5 = io::h5;
namespace {

// A padded batch larger than this is refused: one very long sample would otherwise make every
// batch it lands in pad all the others to its length.
constexpr std::int64_t kMaxBatchBytes = std::int64_t{4} << 30;

// What one shard read for one field: the bytes, and where each of its sorted rows starts in
// them (in values) and how many values it has (fixed: 1 row each).
struct Staged {
  at::Tensor bytes;
  std::vector<std::int64_t> start, length;
};

// count values of `unit` elements each (a fixed sample, or one ragged value), converted to float:
// (x - mean[c]) / std[c] per channel c (the unit's first dimension), or uint8 scaled to [0, 1]
// (data/normalize.hpp).
void to_float(const unsigned char* in, const FieldInfo& field, bool normalize, std::int64_t unit,
              std::int64_t count, float* out) {
  const bool stats = normalize && (!field.mean.empty() || !field.stddev.empty());
  const std::size_t channels = stats ? std::max(field.mean.size(), field.stddev.size()) : 1;
  const std::int64_t per = unit / static_cast<std::int64_t>(channels);
  const std::int64_t spans = count * static_cast<std::int64_t>(channels);
  for (std::int64_t k = 0; k < spans; ++k) {
    const std::size_t c = static_cast<std::size_t>(k) % channels;
    const auto norm = channel_norm(field.mean, field.stddev, field.dtype, normalize, c);
    convert_span(in, field.dtype, k * per, per, norm, out);
  }
}

// Integer values widened to int64; returns false when one lies outside 0..limit-1 (limit > 0).
template <typename In>
bool widen(const unsigned char* in, std::int64_t limit, std::int64_t count, std::int64_t* out) {
  const auto* values = reinterpret_cast<const In*>(in);
  std::int64_t low = 0, high = 0;
  for (std::int64_t e = 0; e < count; ++e) {
    out[e] = static_cast<std::int64_t>(values[e]);
    low = std::min(low, out[e]);
    high = std::max(high, out[e]);
  }
  return limit <= 0 || (low >= 0 && high < limit);
}

void to_int64(const unsigned char* in, const FieldInfo& field, std::int64_t limit,
              std::int64_t count, std::int64_t* out, const std::string& shard) {
  bool fits = true;
  switch (field.dtype) {
    case DType::kUInt16:
      fits = widen<std::uint16_t>(in, limit, count, out);
      break;
    case DType::kInt32:
      fits = widen<std::int32_t>(in, limit, count, out);
      break;
    default:
      fits = widen<std::int64_t>(in, limit, count, out);
  }
  if (fits) return;
  const std::int64_t bad =
      *std::find_if(out, out + count, [limit](std::int64_t v) { return v < 0 || v >= limit; });
  COHORT_THROW(IoError, shard, ": field '", field.location, "': value ", bad, " is outside 0..",
               limit - 1, field.vocab_size > 0 ? " (its vocab_size)" : " (attribute 'classes')");
}

// The runs to read for one field of one shard, and where each row lands in the staging bytes.
std::vector<h5::Run> plan_runs(const FieldInfo& field, const std::vector<std::int64_t>* offsets,
                               const std::vector<std::int64_t>& rows, std::int64_t max_length,
                               Staged& staged) {
  std::vector<h5::Run> runs;
  std::int64_t at = 0;
  staged.start.reserve(rows.size());
  staged.length.reserve(rows.size());
  for (const auto row : rows) {
    std::int64_t first = row, count = 1;
    if (field.ragged) {
      const auto r = static_cast<std::size_t>(row);
      first = (*offsets)[r];
      count = (*offsets)[r + 1] - first;
      if (max_length > 0) count = std::min(count, max_length);
    }
    staged.start.push_back(at);
    staged.length.push_back(count);
    at += count;
    if (count == 0) continue;
    if (!runs.empty() && runs.back().first + runs.back().count == first) {
      runs.back().count += count;
    } else {
      runs.push_back(h5::Run{first, count});
    }
  }
  return runs;
}

struct Output {
  at::Tensor values;  // [B, ...] or [B, L, ...]; raw: [B, sample bytes] or [values, value bytes]
  at::Tensor mask;    // ragged: [B, L] bool; raw: the lengths, int64 [B]
};

Output allocate(const FieldInfo& field, const ReaderOptions& options, BufferPool& pool,
                std::int64_t batch, std::int64_t longest, std::int64_t unit_bytes,
                const std::string& path) {
  std::vector<std::int64_t> shape{batch};
  if (field.ragged) shape.push_back(longest);
  if (options.raw) {
    shape.push_back(unit_bytes);
  } else {
    shape.insert(shape.end(), field.shape.begin(), field.shape.end());
  }
  const std::int64_t element = options.raw ? 1 : field.integer() ? 8 : 4;
  const auto count = checked::product(shape);
  const auto bytes = count ? checked::mul(*count, element) : count;
  COHORT_CHECK(bytes && *bytes <= kMaxBatchBytes, IoError, path, ": field '", field.location,
               "': a batch padded to its longest sample (", longest,
               " values) would take more than 4 GiB; cut samples with data.max_length");
  const auto type = options.raw ? at::kByte : field.integer() ? at::kLong : at::kFloat;
  Output out;
  // Every byte is written by fill(): values or padding (zeros), mask true or false.
  out.values = pool.tensor(shape, type);
  if (field.ragged) out.mask = pool.tensor({batch, longest}, at::kBool);
  return out;
}

// As stored: a fixed field [B, unit bytes]; a ragged one packed, [values, value bytes], with
// its lengths (int64 [B]) in `mask`'s place.
Output allocate_packed(const FieldInfo& field, BufferPool& pool, std::int64_t batch,
                       std::int64_t values, std::int64_t unit_bytes,
                       const std::vector<std::int64_t>& lengths, const std::string& path) {
  if (!field.ragged) {
    ReaderOptions stored;
    stored.raw = true;
    return allocate(field, stored, pool, batch, 1, unit_bytes, path);
  }
  Output out;
  out.values = pool.tensor({values, unit_bytes}, at::kByte);
  out.mask = pool.tensor({batch}, at::kLong);
  std::copy(lengths.begin(), lengths.end(), out.mask.data_ptr<std::int64_t>());
  return out;
}

// As stored, out of order: each sample's values copied into place, packed in batch order.
Output gather_packed(const FieldInfo& field, BufferPool& pool,
                     const std::vector<std::pair<std::size_t, std::int64_t>>& where,
                     const std::vector<std::size_t>& slot, const std::vector<Staged>& staged,
                     std::int64_t unit_bytes, const std::string& path) {
  std::vector<std::int64_t> lengths;
  std::int64_t values = 0;
  for (std::size_t i = 0; i < where.size(); ++i) {
    lengths.push_back(staged[where[i].first].length[slot[i]]);
    values += lengths.back();
  }
  Output out = allocate_packed(field, pool, static_cast<std::int64_t>(where.size()), values,
                               unit_bytes, lengths, path);
  auto* dst = static_cast<unsigned char*>(out.values.data_ptr());
  for (std::size_t i = 0; i < where.size(); ++i) {
    const Staged& from = staged[where[i].first];
    const auto bytes = static_cast<std::size_t>(lengths[i] * unit_bytes);
    std::memcpy(
        dst,
        static_cast<const unsigned char*>(from.bytes.data_ptr()) + from.start[slot[i]] * unit_bytes,
        bytes);
    dst += bytes;
  }
  return out;
}

// One field's values for the whole batch, from what each shard read (staged); slot[i]: where
// sample i is among its shard's sorted rows.
void fill(const DatasetInfo& info, const FieldInfo& field, const ReaderOptions& options,
          const std::vector<std::pair<std::size_t, std::int64_t>>& where,
          const std::vector<std::size_t>& slot, const std::vector<Staged>& staged,
          std::int64_t unit, Output& out) {
  const std::int64_t unit_bytes = unit * static_cast<std::int64_t>(dtype_size(field.dtype));
  const std::int64_t longest = field.ragged ? out.mask.size(1) : 1;
  const std::int64_t out_unit = options.raw ? unit_bytes : unit * (field.integer() ? 8 : 4);
  const std::int64_t limit = field.vocab_size > 0 ? field.vocab_size
                             : field.target       ? info.classes
                                                  : 0;
  auto* base = static_cast<unsigned char*>(out.values.data_ptr());
  for (std::size_t i = 0; i < where.size(); ++i) {
    const std::size_t shard = where[i].first;
    const std::int64_t length = staged[shard].length[slot[i]];
    const auto* src = static_cast<const unsigned char*>(staged[shard].bytes.data_ptr()) +
                      staged[shard].start[slot[i]] * unit_bytes;
    unsigned char* dst = base + static_cast<std::int64_t>(i) * longest * out_unit;
    if (options.raw) {
      std::memcpy(dst, src, static_cast<std::size_t>(length * unit_bytes));
    } else if (field.integer()) {
      to_int64(src, field, limit, length * unit, reinterpret_cast<std::int64_t*>(dst),
               info.shards[shard].path);
    } else {
      to_float(src, field, options.normalize, unit, length, reinterpret_cast<float*>(dst));
    }
    if (field.ragged) {
      std::memset(dst + length * out_unit, 0,
                  static_cast<std::size_t>((longest - length) * out_unit));
      auto* mask = out.mask.data_ptr<bool>() + static_cast<std::int64_t>(i) * longest;
      std::fill(mask, mask + length, true);
      std::fill(mask + length, mask + longest, false);
    }
  }
}

}  // namespace

Batch read_field_batch(const DatasetInfo& info, const ReaderOptions& options, BufferPool& pool,
                       const std::vector<ShardRead>& reads,
                       const std::vector<std::pair<std::size_t, std::int64_t>>& where,
                       const FieldRunReader& read, ReadStats& stats) {
  Batch batch;
  const auto samples = static_cast<std::int64_t>(where.size());
  std::vector<std::size_t> slot(where.size());
  for (std::size_t i = 0; i < where.size(); ++i) {
    const auto& r = reads[where[i].first].rows;
    // (In order, sample i is row i: no search.)
    slot[i] = i < r.size() && r[i] == where[i].second
                  ? i
                  : static_cast<std::size_t>(std::lower_bound(r.begin(), r.end(), where[i].second) -
                                             r.begin());
  }
  // The batch is its shard's rows in order (a contiguous or evaluation batch): a fixed field read
  // as stored then needs no staging, its rows go straight into the batch's tensor.
  const bool in_order =
      !where.empty() && reads[where.front().first].rows.size() == where.size() &&
      std::all_of(slot.begin(), slot.end(),
                  [&, i = std::size_t{0}](std::size_t k) mutable { return k == i++; });
  for (std::size_t f = 0; f < info.fields.size(); ++f) {
    const FieldInfo& field = info.fields[f];
    const std::int64_t unit = shape_numel(field.shape);
    const auto unit_bytes = static_cast<std::size_t>(unit) * dtype_size(field.dtype);
    // As stored, a ragged field comes packed (values back to back, and their lengths), so an
    // in-order batch reads straight into its tensor too.
    const bool direct = in_order && options.raw;
    std::vector<Staged> staged(info.shards.size());
    Output out;
    for (std::size_t s = 0; s < info.shards.size(); ++s) {
      const auto runs = plan_runs(field, info.shards[s].offsets[f].get(), reads[s].rows,
                                  options.max_length, staged[s]);
      const std::int64_t values =
          staged[s].start.empty() ? 0 : staged[s].start.back() + staged[s].length.back();
      if (direct && s == where.front().first) {
        out = allocate_packed(field, pool, samples, values, static_cast<std::int64_t>(unit_bytes),
                              staged[s].length, info.path);
      } else {
        staged[s].bytes =
            pool.bytes(std::max<std::size_t>(1, static_cast<std::size_t>(values) * unit_bytes));
      }
      read(f, s, runs,
           (direct && s == where.front().first ? out.values : staged[s].bytes).data_ptr());
      stats.runs += static_cast<std::int64_t>(runs.size());
      stats.bytes += values * static_cast<std::int64_t>(unit_bytes);
    }
    if (!direct && options.raw && field.ragged) {
      out = gather_packed(field, pool, where, slot, staged, static_cast<std::int64_t>(unit_bytes),
                          info.path);
    } else if (!direct) {
      std::int64_t longest = 1;  // at least one position, so a batch of empty samples has a shape
      for (std::size_t i = 0; i < where.size(); ++i) {
        longest = std::max(longest, staged[where[i].first].length[slot[i]]);
      }
      out = allocate(field, options, pool, samples, field.ragged ? longest : 1,
                     static_cast<std::int64_t>(unit_bytes), info.path);
      fill(info, field, options, where, slot, staged, unit, out);
    }
    auto& list = field.target ? batch.target_fields : batch.fields;
    list.push_back(NamedTensor{field.name, out.values});
    if (field.ragged) {
      list.push_back(NamedTensor{field.name + (options.raw ? "_lengths" : "_mask"), out.mask});
    }
  }
  batch.inputs = batch.fields.front().tensor;
  for (const auto& target : batch.target_fields) {
    if (target.name == info.target) batch.targets = target.tensor;
  }
  return batch;
}

}  // namespace cohort::data
