// The globals a state_dict's pickle may name, and the tensors it rebuilds from them.
#include <ATen/ops/empty.h>

#include <map>
#include <optional>

#include "ckpt/pickle_machine.hpp"
#include "cohort/error.hpp"
#include "common/checked_math.hpp"

namespace cohort::ckpt::pickle {

// torch's typed storage classes, by global name.
bool storage_dtype(const std::string& name, at::ScalarType& dtype) {
  static const std::map<std::string, at::ScalarType> kTypes = {
      {"torch.FloatStorage", at::kFloat}, {"torch.DoubleStorage", at::kDouble},
      {"torch.HalfStorage", at::kHalf},   {"torch.BFloat16Storage", at::kBFloat16},
      {"torch.LongStorage", at::kLong},   {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort}, {"torch.CharStorage", at::kChar},
      {"torch.ByteStorage", at::kByte},   {"torch.BoolStorage", at::kBool}};
  const auto it = kTypes.find(name);
  if (it == kTypes.end()) return false;
  dtype = it->second;
  return true;
}

bool known_callable(const std::string& name) {
  return name == "collections.OrderedDict" || name == "torch._utils._rebuild_tensor_v2" ||
         name == "torch._utils._rebuild_parameter" ||
         name == "torch._utils._rebuild_parameter_with_state" ||
         name == "torch.jit._pickle.restore_type_tag";
}

// _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]), its
// extent inside the storage checked first.
at::Tensor rebuild_tensor(const Value& args, const std::string& path_) {
  const auto& a = args.items;
  const auto ints = [](const Ptr& t) {
    bool ok = t->kind == Kind::kTuple;
    for (const auto& i : t->items) ok = ok && i->kind == Kind::kInt && i->number >= 0;
    return ok;
  };
  COHORT_CHECK(a.size() >= 4 && a[0]->kind == Kind::kStorage && a[1]->kind == Kind::kInt &&
                   a[1]->number >= 0 && ints(a[2]) && ints(a[3]) &&
                   a[2]->items.size() == a[3]->items.size(),
               IoError, path_, ": a tensor whose storage, offset, size or stride is malformed");
  std::vector<std::int64_t> size, stride;
  std::optional<std::int64_t> last = a[1]->number;  // the highest element used
  bool empty = false;
  for (std::size_t d = 0; d < a[2]->items.size(); ++d) {
    size.push_back(a[2]->items[d]->number);
    stride.push_back(a[3]->items[d]->number);
    empty = empty || size.back() == 0;
    const auto span = checked::mul(size.back() == 0 ? 0 : size.back() - 1, stride.back());
    last = last && span ? checked::add(*last, *span) : std::nullopt;
  }
  const at::Tensor& storage = a[0]->tensor;
  COHORT_CHECK(empty || (last && *last < storage.numel()), IoError, path_,
               ": a tensor reaches past its storage of ", storage.numel(), " elements");
  return empty ? at::empty(size, storage.options())
               : storage.as_strided(size, stride, a[1]->number).clone();
}

}  // namespace cohort::ckpt::pickle
