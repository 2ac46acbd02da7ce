// split: train/val files from one dataset, with a seeded permutation (torch.randperm's, so the
// same split can be reproduced in Python).
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "cohort/data/reader.hpp"
#include "cohort/data/sampler.hpp"
#include "cohort/data/tools.hpp"
#include "cohort/data/writer.hpp"
#include "cohort/error.hpp"
#include "cohort/io/output.hpp"
#include "io/h5/file.hpp"

namespace cohort::data {
namespace h5 = io::h5;
namespace {

void copy_samples(BatchReader& reader, std::vector<std::int64_t> indices, const std::string& out,
                  const std::string& split) {
  std::sort(indices.begin(), indices.end());
  WriterSpec spec = spec_like(reader.info(), static_cast<std::int64_t>(indices.size()));
  spec.split = split;
  DatasetWriter writer(out, spec);
  const auto block = static_cast<std::size_t>(std::max<std::size_t>(
      1, (8u << 20) / std::max<std::size_t>(1, reader.info().sample_bytes())));
  for (std::size_t first = 0; first < indices.size(); first += block) {
    const std::vector<std::int64_t> part(
        indices.begin() + static_cast<std::ptrdiff_t>(first),
        indices.begin() + static_cast<std::ptrdiff_t>(std::min(first + block, indices.size())));
    const Batch batch = reader.read(part);
    writer.write_samples(static_cast<std::int64_t>(first), static_cast<std::int64_t>(part.size()),
                         batch.inputs.data_ptr(), batch.targets.data_ptr());
  }
  writer.commit();
}

// Field datasets: each field's raw bytes per block of samples; ragged values packed back from
// the padded batch by its mask.
void copy_fields(BatchReader& reader, std::vector<std::int64_t> indices, const std::string& out,
                 const std::string& split) {
  std::sort(indices.begin(), indices.end());
  const DatasetInfo& info = reader.info();
  WriterSpec spec = spec_like(info, static_cast<std::int64_t>(indices.size()));
  spec.split = split;
  std::vector<FieldSpec> fields;
  for (std::size_t f = 0; f < info.fields.size(); ++f) {
    const FieldInfo& field = info.fields[f];
    FieldSpec s{field.name, field.target,     field.ragged, field.shape, field.dtype,
                0,          field.vocab_size, field.mean,   field.stddev};
    if (field.ragged) {
      const auto lengths = sample_lengths(info, f);
      for (const auto i : indices) s.values += lengths[static_cast<std::size_t>(i)];
    }
    fields.push_back(std::move(s));
  }
  FieldWriter writer(out, spec, fields);
  constexpr std::size_t kBlock = 256;
  for (std::size_t first = 0; first < indices.size(); first += kBlock) {
    const std::vector<std::int64_t> part(
        indices.begin() + static_cast<std::ptrdiff_t>(first),
        indices.begin() + static_cast<std::ptrdiff_t>(std::min(first + kBlock, indices.size())));
    const Batch batch = reader.read(part);
    std::size_t input = 0, target = 0;
    for (std::size_t f = 0; f < fields.size(); ++f) {
      const auto& list = fields[f].target ? batch.target_fields : batch.fields;
      std::size_t& at = fields[f].target ? target : input;
      const at::Tensor values = list[at++].tensor.contiguous();
      if (!fields[f].ragged) {
        writer.write_rows(f, static_cast<std::int64_t>(first),
                          static_cast<std::int64_t>(part.size()), values.data_ptr());
        continue;
      }
      // As stored, a ragged field comes packed: its values back to back, then their lengths.
      const at::Tensor lengths = list[at++].tensor;
      const auto* length = lengths.data_ptr<std::int64_t>();
      writer.append(f, {length, length + lengths.numel()}, values.data_ptr());
    }
  }
  writer.commit();
}

void copy_tokens(const DatasetInfo& info, std::int64_t first, std::int64_t count,
                 const std::string& out, const std::string& split) {
  h5::Hid file = h5::open_file(info.shards.front().path);
  h5::Hid tokens = h5::open_dataset(file.get(), "/tokens", info.path);
  std::vector<std::int32_t> values(static_cast<std::size_t>(count));
  h5::read_runs(tokens.get(), {h5::Run{first, count}}, DType::kInt32, values.data(), H5P_DEFAULT,
                false, info.path + ": dataset '/tokens'");
  WriterSpec spec = spec_like(info, 0);
  spec.num_tokens = count;
  spec.split = split;
  DatasetWriter writer(out, spec);
  if (spec.token_dtype == DType::kUInt16) {
    std::vector<std::uint16_t> narrow(values.begin(), values.end());
    writer.write_tokens(0, count, narrow.data());
  } else {
    writer.write_tokens(0, count, values.data());
  }
  writer.commit();
}

}  // namespace

SplitResult split_dataset(const std::string& in, const std::string& train_out,
                          const std::string& val_out, double val_fraction, std::uint64_t seed) {
  COHORT_CHECK(val_fraction > 0 && val_fraction < 1, UsageError,
               "split: --val-fraction must be in (0, 1), not ", val_fraction);
  // Three distinct files: --train X --val X wrote the validation part over the training part,
  // and an output equal to the input would be replaced by a part of itself.
  io::OutputPlan().read(in, "PATH").write(train_out, "--train").write(val_out, "--val").check();
  ReaderOptions options;
  options.raw = true;
  options.pin_memory = false;
  BatchReader reader(in, options);
  const auto& info = reader.info();
  SplitResult result;
  if (info.kind == DatasetKind::kTokens) {
    COHORT_CHECK(info.shards.size() == 1, UsageError, "split: ", in,
                 ": token datasets are split as one file");
    const std::int64_t total = info.shards.front().tokens;
    const auto val =
        static_cast<std::int64_t>(std::llround(val_fraction * static_cast<double>(total)));
    COHORT_CHECK(val > info.seq_len && total - val > info.seq_len, UsageError, "split: ", in,
                 ": too few tokens for both parts to hold a sequence");
    copy_tokens(info, 0, total - val, train_out, "train");
    copy_tokens(info, total - val, val, val_out, "val");
    return SplitResult{(total - val - 1) / info.seq_len, (val - 1) / info.seq_len};
  }
  const std::int64_t n = info.num_samples;
  const auto val = static_cast<std::int64_t>(std::llround(val_fraction * static_cast<double>(n)));
  COHORT_CHECK(val >= 1 && val < n, UsageError, "split: ", in, ": ", n,
               " samples cannot be split with fraction ", val_fraction);
  // torch.randperm(n, generator=torch.Generator().manual_seed(seed))
  const auto order = DistributedSampler(SamplerOptions{n, 0, 1, seed, true, false}).indices(0);
  const auto copy = info.kind == DatasetKind::kFields ? copy_fields : copy_samples;
  copy(reader, {order.begin(), order.end() - val}, train_out, "train");
  copy(reader, {order.end() - val, order.end()}, val_out, "val");
  result.train = n - val;
  result.val = val;
  return result;
}

}  // namespace cohort::data
