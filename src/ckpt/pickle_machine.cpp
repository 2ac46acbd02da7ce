#include "ckpt/pickle_machine.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "cohort/error.hpp"

namespace cohort::ckpt::pickle {

const char* kind_name(Kind kind) {
  static const char* kNames[] = {"None", "bool", "int",    "float",   "str",    "tuple",
                                 "list", "dict", "global", "storage", "tensor", "mark"};
  return kNames[static_cast<int>(kind)];
}

const Value* Value::find(const std::string& key) const {
  if (kind != Kind::kDict) return nullptr;
  for (const auto& [k, v] : entries) {
    if (k->kind == Kind::kString && k->text == key) return v.get();
  }
  return nullptr;
}

namespace {

constexpr std::size_t kMaxStack = 1 << 20;
constexpr std::size_t kMaxMemo = 1 << 22;
// Deeper nesting would make the values' destructors recurse past the stack; a state_dict is 3
// deep (a dict in a dict of tensors).
constexpr int kMaxDepth = 64;

Ptr make(Kind kind) {
  auto v = std::make_shared<Value>();
  v->kind = kind;
  return v;
}

class Machine {
 public:
  Machine(const std::string& pickle, const std::string& path, const StorageLoader& load)
      : in_(pickle), path_(path), load_(load) {}
  Value run();

 private:
  bool step(unsigned char op);
  bool step_values(unsigned char op);
  bool step_containers(unsigned char op);
  // Reading the pickle's bytes.
  const char* take(std::size_t n) {
    COHORT_CHECK(n <= in_.size() - at_, IoError, path_, ": the pickle ends inside an opcode");
    const char* p = in_.data() + at_;
    at_ += n;
    return p;
  }
  std::uint64_t unsigned_le(std::size_t n) {
    const auto* p = reinterpret_cast<const unsigned char*>(take(n));
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    return v;
  }
  std::string line() {
    const auto end = in_.find('\n', at_);
    COHORT_CHECK(end != std::string::npos, IoError, path_, ": the pickle ends inside a GLOBAL");
    std::string text = in_.substr(at_, end - at_);
    at_ = end + 1;
    return text;
  }
  void push(Ptr v) {
    COHORT_CHECK(stack_.size() < kMaxStack, IoError, path_, ": the pickle's stack overflows");
    stack_.push_back(std::move(v));
  }
  Ptr pop() {
    COHORT_CHECK(!stack_.empty() && stack_.back()->kind != Kind::kMark, IoError, path_,
                 ": the pickle pops an empty stack");
    Ptr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  Ptr& top() {
    COHORT_CHECK(!stack_.empty(), IoError, path_, ": the pickle reads an empty stack");
    return stack_.back();
  }
  // The items above the topmost mark, which goes.
  std::vector<Ptr> pop_to_mark() {
    std::size_t mark = stack_.size();
    while (mark > 0 && stack_[mark - 1]->kind != Kind::kMark) --mark;
    COHORT_CHECK(mark > 0, IoError, path_, ": the pickle has no MARK to pop to");
    std::vector<Ptr> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark - 1);
    return items;
  }
  Ptr tuple(std::vector<Ptr> items) {
    Ptr v = make(Kind::kTuple);
    for (const auto& item : items) nest(*v, *item);
    v->items = std::move(items);
    return v;
  }
  // `container` takes `child`: its depth grows to hold it, up to kMaxDepth.
  void nest(Value& container, const Value& child) {
    container.depth = std::max(container.depth, child.depth + 1);
    COHORT_CHECK(container.depth <= kMaxDepth, IoError, path_, ": the pickle nests deeper than ",
                 kMaxDepth);
  }
  // The list or dict on top, which takes items: only while no other container holds it (the
  // stack and the memo may), so that every container's depth stays what nest() recorded.
  Value& open_container(Kind kind) {
    Ptr& v = top();
    COHORT_CHECK(v->kind == kind, IoError, path_, ": adds items to a ", kind_name(v->kind));
    COHORT_CHECK(v.use_count() <= 2, IoError, path_,
                 ": adds items to a container already inside another");
    return *v;
  }
  void put(std::uint64_t index) {
    COHORT_CHECK(memo_.size() < kMaxMemo || memo_.count(index), IoError, path_,
                 ": the pickle's memo grows past ", kMaxMemo);
    memo_[index] = top();
  }
  void get(std::uint64_t index) {
    const auto it = memo_.find(index);
    COHORT_CHECK(it != memo_.end(), IoError, path_, ": the pickle reads memo ", index,
                 ", never written");
    push(it->second);
  }
  void global(const std::string& name);
  void reduce();
  void persistent_id();

  const std::string& in_;
  std::size_t at_ = 0;
  const std::string& path_;
  const StorageLoader& load_;
  std::vector<Ptr> stack_;
  std::map<std::uint64_t, Ptr> memo_;
  std::map<std::string, Ptr> storages_;  // by key: tensors sharing a storage share it here too
};

Value Machine::run() {
  for (;;) {
    const auto op = static_cast<unsigned char>(*take(1));
    if (!step(op)) break;
  }
  COHORT_CHECK(stack_.size() == 1, IoError, path_, ": the pickle stops with ", stack_.size(),
               " values on its stack");
  return *stack_.back();
}

// One opcode; false at STOP.
bool Machine::step(unsigned char op) {
  switch (op) {
    case '.':  // STOP
      return false;
    case 0x80:  // PROTO
      COHORT_CHECK(unsigned_le(1) <= 5, IoError, path_, ": pickle protocol above 5");
      return true;
    case 0x95:  // FRAME: a length hint only
      take(8);
      return true;
    case '(':
      push(make(Kind::kMark));
      return true;
    case 'q':
      put(unsigned_le(1));
      return true;
    case 'r':
      put(unsigned_le(4));
      return true;
    case 0x94:  // MEMOIZE
      put(memo_.size());
      return true;
    case 'h':
      get(unsigned_le(1));
      return true;
    case 'j':
      get(unsigned_le(4));
      return true;
    case 'c': {  // GLOBAL module\nname\n
      const std::string module = line();
      global(module + "." + line());
      return true;
    }
    case 0x93: {  // STACK_GLOBAL
      const Ptr name = pop(), module = pop();
      COHORT_CHECK(name->kind == Kind::kString && module->kind == Kind::kString, IoError, path_,
                   ": STACK_GLOBAL of non-strings");
      global(module->text + "." + name->text);
      return true;
    }
    case 'R':
      reduce();
      return true;
    case 'Q':
      persistent_id();
      return true;
    case 'b': {  // BUILD: a dict's attributes (OrderedDict's _metadata), a tensor's state
      pop();
      const Kind kind = top()->kind;
      COHORT_CHECK(kind == Kind::kDict || kind == Kind::kTensor, IoError, path_, ": BUILD on a ",
                   kind_name(kind));
      return true;
    }
    default:
      if (step_values(op)) return true;
      COHORT_CHECK(step_containers(op), IoError, path_, ": pickle opcode 0x", std::hex,
                   static_cast<int>(op), " is not one torch.save writes for a state_dict");
      return true;
  }
}

// Scalars and strings; false when `op` is none of them.
bool Machine::step_values(unsigned char op) {
  Ptr v;
  switch (op) {
    case 'N':
      v = make(Kind::kNone);
      break;
    case 0x88:
    case 0x89:
      v = make(Kind::kBool);
      v->number = op == 0x88;
      break;
    case 'K':
    case 'M':
    case 'J': {
      v = make(Kind::kInt);
      const std::size_t n = op == 'K' ? 1 : op == 'M' ? 2 : 4;
      const std::uint64_t raw = unsigned_le(n);
      v->number = n == 4 ? static_cast<std::int32_t>(raw) : static_cast<std::int64_t>(raw);
      break;
    }
    case 0x8a: {  // LONG1
      const std::size_t n = unsigned_le(1);
      COHORT_CHECK(n <= 8, IoError, path_, ": an integer of ", n, " bytes");
      v = make(Kind::kInt);
      const std::uint64_t raw = n == 0 ? 0 : unsigned_le(n);
      const unsigned shift = static_cast<unsigned>(64 - 8 * n);
      v->number = n == 0 ? 0 : static_cast<std::int64_t>(raw << shift) >> shift;
      break;
    }
    case 'G': {  // BINFLOAT, big-endian
      const auto* p = reinterpret_cast<const unsigned char*>(take(8));
      std::uint64_t bits = 0;
      for (int i = 0; i < 8; ++i) bits = (bits << 8) | p[i];
      v = make(Kind::kFloat);
      std::memcpy(&v->real, &bits, 8);
      break;
    }
    case 'X':
    case 0x8c:
    case 0x8d:
    case 'B':
    case 'C': {  // strings and bytes (kept as text)
      const std::size_t n = (op == 0x8c || op == 'C') ? 1 : op == 0x8d ? 8 : 4;
      const std::uint64_t length = unsigned_le(n);
      COHORT_CHECK(length <= in_.size() - at_, IoError, path_, ": a string of ", length,
                   " bytes past the pickle's end");
      v = make(Kind::kString);
      v->text.assign(take(length), length);
      break;
    }
    default:
      return false;
  }
  push(std::move(v));
  return true;
}

// Tuples, lists, dicts; false when `op` is none of them.
bool Machine::step_containers(unsigned char op) {
  switch (op) {
    case ')':
      push(tuple({}));
      return true;
    case 't':
      push(tuple(pop_to_mark()));
      return true;
    case 0x85:
    case 0x86:
    case 0x87: {
      std::vector<Ptr> items(static_cast<std::size_t>(op - 0x84));
      for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
      push(tuple(std::move(items)));
      return true;
    }
    case ']':
    case 'l':
    case 'a':
    case 'e': {  // a new list (of the items above the mark), or items appended to the top one
      std::vector<Ptr> items;
      if (op == 'l' || op == 'e') items = pop_to_mark();
      if (op == 'a') items = {pop()};
      if (op == ']' || op == 'l') push(make(Kind::kList));
      Value& list = open_container(Kind::kList);
      for (auto& item : items) {
        nest(list, *item);
        list.items.push_back(std::move(item));
      }
      return true;
    }
    case '}':
    case 'd':
    case 's':
    case 'u': {
      std::vector<Ptr> items;
      if (op == 'd' || op == 'u') items = pop_to_mark();
      if (op == 's') {
        Ptr value = pop(), key = pop();
        items = {key, value};
      }
      if (op == '}' || op == 'd') push(make(Kind::kDict));
      Value& dict = open_container(Kind::kDict);
      COHORT_CHECK(items.size() % 2 == 0, IoError, path_, ": SETITEMS of an odd count");
      for (std::size_t i = 0; i < items.size(); i += 2) {
        nest(dict, *items[i]);
        nest(dict, *items[i + 1]);
        dict.entries.emplace_back(items[i], items[i + 1]);
      }
      return true;
    }
    default:
      return false;
  }
}

void Machine::global(const std::string& name) {
  at::ScalarType dtype{};
  COHORT_CHECK(known_callable(name) || storage_dtype(name, dtype), IoError, path_,
               ": the pickle names ", name,
               ", which a state_dict of tensors does not hold (refused: Cohort runs no code "
               "from a file)");
  Ptr v = make(Kind::kGlobal);
  v->text = name;
  push(std::move(v));
}

// ('storage', <torch.XStorage>, key, location, numel): the storage, loaded once per key.
void Machine::persistent_id() {
  const Ptr pid = pop();
  const auto& f = pid->items;
  at::ScalarType dtype{};
  COHORT_CHECK(pid->kind == Kind::kTuple && f.size() == 5 && f[0]->kind == Kind::kString &&
                   f[0]->text == "storage" && f[1]->kind == Kind::kGlobal &&
                   storage_dtype(f[1]->text, dtype) && f[2]->kind == Kind::kString &&
                   f[4]->kind == Kind::kInt && f[4]->number >= 0,
               IoError, path_, ": a persistent id that is not a typed storage");
  Ptr& storage = storages_[f[2]->text];
  if (!storage) {
    storage = make(Kind::kStorage);
    storage->tensor = load_(f[2]->text, dtype, f[4]->number);
  }
  COHORT_CHECK(storage->tensor.scalar_type() == dtype && storage->tensor.numel() == f[4]->number,
               IoError, path_, ": storage ", f[2]->text, " is named twice, differently");
  push(storage);
}

void Machine::reduce() {
  const Ptr args = pop(), callable = pop();
  COHORT_CHECK(callable->kind == Kind::kGlobal && args->kind == Kind::kTuple, IoError, path_,
               ": REDUCE of a ", kind_name(callable->kind));
  const std::string& name = callable->text;
  if (name == "collections.OrderedDict") {
    COHORT_CHECK(args->items.empty(), IoError, path_, ": OrderedDict with arguments");
    push(make(Kind::kDict));
  } else if (name == "torch._utils._rebuild_tensor_v2") {
    Ptr v = make(Kind::kTensor);
    v->tensor = rebuild_tensor(*args, path_);
    push(std::move(v));
  } else if (name == "torch.jit._pickle.restore_type_tag") {  // (value, "Dict[str, Tensor]")
    COHORT_CHECK(args->items.size() == 2, IoError, path_, ": restore_type_tag of ",
                 args->items.size(), " arguments");
    push(args->items[0]);
  } else {  // _rebuild_parameter(data, requires_grad, hooks[, state]): the data
    COHORT_CHECK(!args->items.empty() && args->items[0]->kind == Kind::kTensor, IoError, path_,
                 ": ", name, " of no tensor");
    push(args->items[0]);
  }
}

}  // namespace

Value run(const std::string& pickle, const std::string& path, const StorageLoader& load) {
  return Machine(pickle, path, load).run();
}

}  // namespace cohort::ckpt::pickle
