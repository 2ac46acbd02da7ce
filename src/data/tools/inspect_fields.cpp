// inspect for field datasets: every field's values (and a ragged one's lengths), read shard by
// shard in blocks, checked as training's reader checks them.
#include "cohort/error.hpp"
#include "data/tools/inspect_values.hpp"

namespace cohort::data {
namespace {

void inspect_field(const DatasetInfo& info, std::size_t f, bool labels, Inspection& out) {
  const FieldInfo& field = info.fields[f];
  FieldInspection result;
  result.field = field;
  Accumulator values, lengths;
  const std::int64_t unit = shape_numel(field.shape);
  const std::int64_t block = std::max<std::int64_t>(1, (8 << 20) / (unit * 8));
  const std::int64_t limit = field.vocab_size > 0 ? field.vocab_size
                             : field.target       ? info.classes
                                                  : 0;
  const char* attribute = field.vocab_size > 0 ? "vocab_size" : "classes";
  for (std::size_t s = 0; s < info.shards.size(); ++s) {
    const ShardInfo& shard = info.shards[s];
    const std::string name = field.ragged ? field.location + "/values" : field.location;
    const std::string where = shard.path + ": dataset '" + name + "'";
    const auto file = io::h5::open_file(shard.path);
    const auto set = io::h5::open_dataset(file.get(), name, shard.path);
    std::int64_t first = 0, last = shard.samples;
    if (field.ragged) {
      const auto& offsets = *shard.offsets.at(f);
      for (std::size_t i = 1; i < offsets.size(); ++i) {
        lengths.add(static_cast<double>(offsets[i] - offsets[i - 1]));
      }
      first = offsets.front();
      last = offsets.back();
    }
    for (std::int64_t at = first; at < last; at += block) {
      const io::h5::Run run{at, std::min(block, last - at)};
      for (const double v : read_values(set.get(), field.dtype, run, unit, where)) {
        if (field.integer()) check_range(v, limit, where, "value", attribute);
        if (labels) ++out.class_histogram[static_cast<std::int64_t>(v)];
        values.add(v);
      }
    }
  }
  result.values = values.stats();
  result.lengths = lengths.stats();
  result.total_values = values.count;
  out.fields.push_back(std::move(result));
}

}  // namespace

void inspect_fields(const DatasetInfo& info, Inspection& out) {
  bool labelled = false;
  for (std::size_t f = 0; f < info.fields.size(); ++f) {
    const FieldInfo& field = info.fields[f];
    // The class histogram: of the first integer scalar target.
    const bool labels =
        !labelled && field.target && field.integer() && !field.ragged && field.shape.empty();
    labelled = labelled || labels;
    inspect_field(info, f, labels, out);
  }
}

}  // namespace cohort::data
