#include "train/tensor_reshard.hpp"

#include <utility>

#include "cohort/ckpt/reader.hpp"
#include "cohort/ckpt/tensor_parts.hpp"
#include "cohort/error.hpp"

namespace cohort::train {

ckpt::TensorSource tensor_reshard_source(std::map<std::string, pipeline::SplitLayout> mine,
                                         int size) {
  return [mine = std::move(mine), size](ckpt::CheckpointReader& reader,
                                        const ckpt::NamedTensor& want, at::Tensor& buffer,
                                        bool verify) {
    if (reader.manifest().find(want.name) != nullptr) return false;  // stored as it is wanted
    // This run's part "<kind>.<param>.tp<r>of<size><tail>" is cut from "<kind>.<param><tail>".
    std::string whole_name = want.name;
    const pipeline::SplitLayout* cut = nullptr;
    for (const auto& [param, layout] : mine) {
      if (const auto whole = ckpt::joined_name(want.name, {{param, size}})) {
        whole_name = *whole;
        cut = &layout;
        break;
      }
    }
    const auto whole = ckpt::read_joined(reader, whole_name, verify);
    if (!whole) return false;  // the default reports the missing name
    at::Tensor value = *whole;
    const bool step_count =
        whole_name.size() >= 5 && whole_name.compare(whole_name.size() - 5, 5, ".step") == 0;
    if (cut != nullptr && !step_count) {
      COHORT_CHECK(cut->dim < value.dim() && value.size(cut->dim) == cut->whole, IoError,
                   reader.path(), "/manifest.json: tensor '", whole_name, "' is ", value.sizes(),
                   ", not a whole of ", cut->whole, " along dimension ", cut->dim);
      value = value.index_select(cut->dim, cut->kept);
    }
    if (want.part) {
      const std::int64_t offset = want.part->offset, count = want.tensor.numel();
      COHORT_CHECK(offset >= 0 && offset <= value.numel() - count, IoError, reader.path(),
                   ": tensor '", whole_name, "' has no elements [", offset, ", +", count, ")");
      value = value.reshape({-1}).narrow(0, offset, count);
    }
    COHORT_CHECK(value.numel() == buffer.numel() && value.scalar_type() == buffer.scalar_type(),
                 IoError, reader.path(), "/manifest.json: tensor '", whole_name, "' joined is ",
                 value.scalar_type(), " ", value.sizes(), ", wanted ", buffer.scalar_type(), " ",
                 buffer.sizes(), " for '", want.name, "'");
    buffer.copy_(value.reshape(buffer.sizes()));
    return true;
  };
}

}  // namespace cohort::train
