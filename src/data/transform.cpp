#include "cohort/data/transform.hpp"

#include <ATen/ops/empty.h>
#include <torch/csrc/api/include/torch/utils.h>

#include <sstream>

#include "cohort/error.hpp"
#include "common/splitmix.hpp"
#include "common/torchscript_load.hpp"

namespace cohort::data {
using torchscript::first_line;
using torchscript::last_line;

struct BatchTransform::Impl {
  std::string path;
  mutable torch::jit::Module module;
};

std::int64_t sample_seed(std::uint64_t seed, std::int64_t epoch, std::int64_t index) {
  return static_cast<std::int64_t>(
      splitmix64(seed ^ (static_cast<std::uint64_t>(epoch) * 0x9e3779b97f4a7c15ull) ^
                 (static_cast<std::uint64_t>(index) * 0xbf58476d1ce4e5b9ull)) >>
      1);
}

BatchTransform::BatchTransform(const std::string& path, bool training)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->module = torchscript::load<IoError>(path, "data.transform");
  impl_->module.train(training);
}

BatchTransform::~BatchTransform() = default;

void BatchTransform::apply(Batch& batch, std::uint64_t seed) const {
  const std::string& path = impl_->path;
  std::vector<NamedTensor> named = batch.fields;
  if (named.empty()) named.push_back({"inputs", batch.inputs});
  c10::Dict<std::string, at::Tensor> inputs;
  for (const auto& [name, tensor] : named) inputs.insert(name, tensor);
  at::Tensor seeds = at::empty({static_cast<std::int64_t>(batch.indices.size())}, at::kLong);
  for (std::size_t i = 0; i < batch.indices.size(); ++i) {
    seeds.data_ptr<std::int64_t>()[i] = sample_seed(seed, batch.epoch, batch.indices[i]);
  }
  c10::IValue result;
  try {
    torch::NoGradGuard no_grad;
    result = impl_->module.forward({inputs, seeds});
  } catch (const c10::Error& e) {
    COHORT_THROW(IoError, path,
                 ": data.transform failed: ", first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {  // the interpreter's own (a `raise` in the script)
    COHORT_THROW(IoError, path, ": data.transform failed: ", last_line(e.what()));
  }
  COHORT_CHECK(result.isGenericDict(), IoError, path,
               ": data.transform must return Dict[str, Tensor], not ", result.tagKind());
  const auto out = result.toGenericDict();
  COHORT_CHECK(out.size() == named.size(), IoError, path, ": data.transform returned ", out.size(),
               " tensors for ", named.size(), " inputs");
  for (auto& [name, tensor] : named) {
    const auto it = out.find(name);
    COHORT_CHECK(it != out.end() && it->value().isTensor(), IoError, path,
                 ": data.transform returned no tensor '", name, "'");
    at::Tensor changed = it->value().toTensor();
    COHORT_CHECK(changed.dim() > 0 && changed.size(0) == tensor.size(0), IoError, path,
                 ": data.transform changed the batch size of '", name, "' from ", tensor.size(0),
                 " to ", changed.dim() > 0 ? changed.size(0) : 0);
    COHORT_CHECK(changed.scalar_type() == tensor.scalar_type(), IoError, path,
                 ": data.transform changed the dtype of '", name, "' from ",
                 c10::toString(tensor.scalar_type()), " to ", c10::toString(changed.scalar_type()));
    tensor = changed.contiguous();
  }
  if (batch.fields.empty()) {
    batch.inputs = named.front().tensor;
  } else {
    batch.fields = named;
    batch.inputs = named.front().tensor;
  }
}

}  // namespace cohort::data
