// A restricted pickle machine for torch.save's data.pkl: the values a state_dict pickles to
// (None, bools, ints, floats, strings, tuples, lists, dicts, tensors) and nothing else. Globals
// are looked up in a fixed list (collections.OrderedDict, torch._utils' tensor and parameter
// rebuilders, torch.jit's type tag of LibTorch's typed dicts, torch's typed storage classes); any
// other is refused before anything is called, so a file cannot make it run code. Storages come from
// `load` (the zip's records), which checks their bytes; each tensor's extent is checked against its
// storage here. Errors: IoError naming `path`.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cohort::ckpt::pickle {

enum class Kind {
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kTuple,
  kList,
  kDict,
  kGlobal,
  kStorage,
  kTensor,
  kMark
};
const char* kind_name(Kind kind);

struct Value;
using Ptr = std::shared_ptr<Value>;
struct Value {
  Kind kind = Kind::kNone;
  std::int64_t number = 0;                   // bool, int
  double real = 0;                           // float
  std::string text;                          // string; a global's "module.name"
  std::vector<Ptr> items;                    // tuple, list
  std::vector<std::pair<Ptr, Ptr>> entries;  // dict, in insertion order
  at::Tensor tensor;                         // storage (1-D), tensor
  int depth = 1;                             // nesting: containers at most kMaxDepth deep
  // A dict's value under a string key (nullptr when absent or not a dict).
  const Value* find(const std::string& key) const;
};

// Storage `key` of `numel` elements of `dtype`, as a 1-D tensor.
using StorageLoader =
    std::function<at::Tensor(const std::string& key, at::ScalarType dtype, std::int64_t numel)>;

Value run(const std::string& pickle, const std::string& path, const StorageLoader& load);

// The machine's pieces (pickle_globals.cpp). A torch typed storage class's dtype (false: not one).
bool storage_dtype(const std::string& name, at::ScalarType& dtype);
// The callables REDUCE may call: OrderedDict, the tensor and parameter rebuilders, the type tag.
bool known_callable(const std::string& name);
// _rebuild_tensor_v2's arguments as a tensor, its extent checked against its storage first.
at::Tensor rebuild_tensor(const Value& args, const std::string& path);

}  // namespace cohort::ckpt::pickle
