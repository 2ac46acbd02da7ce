#include "models/materialize.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/GradMode.h>
#include <sys/mman.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "cohort/error.hpp"
#include "cohort/pipeline/tensor_parallel.hpp"
#include "common/torch_compat.hpp"

namespace cohort::models {

namespace {

// The skeleton's mappings alive, and which of them may hold written pages. Shared with the
// deleters, which may run after the scope is gone (a skeleton tensor lives as long as its module).
struct Registry {
  std::mutex mutex;
  std::vector<std::pair<void*, std::size_t>> written;
};

// Every skeleton mapping alive in the process, whichever scope made it. None holds a value until
// DDP places the model: ZeRO 3's units whose buckets others come between get theirs in place,
// in the skeleton's storage, before it is copied into their flat buffer.
// Shared with the deleters, which may run after static destruction (a module kept to the exit).
struct LiveMappings {
  std::mutex mutex;
  std::map<void*, std::size_t> bytes;
};

const std::shared_ptr<LiveMappings>& live_mappings() {
  static const auto live = std::make_shared<LiveMappings>();
  return live;
}

struct Mapping {
  void* address = nullptr;
  std::size_t bytes = 0;
  std::shared_ptr<Registry> registry;
  std::shared_ptr<LiveMappings> live;
};

void unmap(void* context) {
  const std::unique_ptr<Mapping> mapping(static_cast<Mapping*>(context));
  {
    // Forgotten before the range is returned: it must never be released again once the kernel
    // may hand it to someone else.
    std::lock_guard<std::mutex> lock(mapping->registry->mutex);
    auto& written = mapping->registry->written;
    for (auto it = written.begin(); it != written.end(); ++it) {
      if (it->first == mapping->address) {
        written.erase(it);
        break;
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(mapping->live->mutex);
    mapping->live->bytes.erase(mapping->address);
  }
  ::munmap(mapping->address, mapping->bytes);
}

// Caller holds the registry's lock.
void release_written(Registry& registry) {
  for (const auto& [address, bytes] : registry.written) ::madvise(address, bytes, MADV_DONTNEED);
  registry.written.clear();
}

}  // namespace

class SkeletonScope::Allocator final : public torch_compat::AllocatorBase {
 public:
  Allocator()
      : real_(c10::GetCPUAllocator()),
        owner_(std::this_thread::get_id()),
        registry_(std::make_shared<Registry>()) {}
  c10::Allocator* real() const { return real_; }
  void release_all() const {
    std::lock_guard<std::mutex> lock(registry_->mutex);
    release_written(*registry_);
  }

 protected:
  c10::DataPtr make(std::size_t n) const override {
    if (n < kSkeletonBytes || std::this_thread::get_id() != owner_) return real_->allocate(n);
    std::lock_guard<std::mutex> lock(registry_->mutex);
    release_written(*registry_);
    void* address = ::mmap(nullptr, n, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    COHORT_CHECK(address != MAP_FAILED, EnvironmentError, "model.materialize = own: mmap of ", n,
                 " bytes failed: ", std::strerror(errno));
    std::unique_ptr<Mapping> mapping;
    try {
      mapping = std::make_unique<Mapping>(Mapping{address, n, registry_, live_mappings()});
    } catch (...) {  // no memory for the record: the mapping goes back before the error goes on
      ::munmap(address, n);
      throw;
    }
    try {
      registry_->written.emplace_back(address, n);
      std::lock_guard<std::mutex> live_lock(mapping->live->mutex);
      mapping->live->bytes[address] = n;
    } catch (...) {  // the registry's lock is held: what was recorded forgotten, the range back
      auto& written = registry_->written;
      if (!written.empty() && written.back().first == address) written.pop_back();
      ::munmap(address, n);
      throw;
    }
    return c10::DataPtr(address, mapping.release(), &unmap, c10::Device(c10::kCPU));
  }

 private:
  c10::Allocator* real_;
  std::thread::id owner_;
  std::shared_ptr<Registry> registry_;
};

// The highest priority: a scope's allocator replaces whatever is installed, and the restore
// must be allowed to replace it back.
constexpr std::uint8_t kPriority = 255;

SkeletonScope::SkeletonScope() : allocator_(std::make_unique<Allocator>()) {
  c10::SetCPUAllocator(allocator_.get(), kPriority);
}

SkeletonScope::~SkeletonScope() {
  c10::SetCPUAllocator(allocator_->real(), kPriority);
  allocator_->release_all();
  // The allocator object must outlive any allocate() in flight on another thread that read it
  // before the restore; such a call returns at once (not the owner), so a short life is enough,
  // but it is kept for the process's life to be sure: it is a few pointers.
  static std::vector<std::unique_ptr<Allocator>> retired;
  static std::mutex retired_mutex;
  std::lock_guard<std::mutex> lock(retired_mutex);
  retired.push_back(std::move(allocator_));
}

void release_skeleton_pages() {
  LiveMappings& live = *live_mappings();
  std::lock_guard<std::mutex> lock(live.mutex);
  for (const auto& [address, bytes] : live.bytes) ::madvise(address, bytes, MADV_DONTNEED);
}

namespace {

// FNV-1a over the module's name, mixed with the seed (splitmix64's finaliser): the same on every
// machine, unlike std::hash.
std::uint64_t module_seed(std::uint64_t seed, const std::string& name) {
  std::uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  std::uint64_t z = h ^ (seed + 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Where a value is drawn: a tensor of its own (it becomes the parameter's storage), or, to be
// copied into place and dropped, a mapping of its own unmapped when freed, which leaves no hole
// in the heap for the next unit's buffers to miss.
class Values {
 public:
  explicit Values(bool scratch) : scratch_(scratch) {}
  at::Tensor empty(at::IntArrayRef shape, at::ScalarType type = at::kFloat) const {
    const auto options = at::TensorOptions().dtype(type);
    std::size_t bytes = c10::elementSize(type);
    for (const auto d : shape) bytes *= static_cast<std::size_t>(d);
    if (!scratch_ || bytes < kSkeletonBytes) return at::empty(shape, options);
    void* address =
        ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    COHORT_CHECK(address != MAP_FAILED, EnvironmentError, "model.materialize = own: mmap of ",
                 bytes, " bytes failed: ", std::strerror(errno));
    return at::from_blob(
        address, shape, [bytes](void* p) { ::munmap(p, bytes); }, options);
  }
  at::Tensor uniform(at::IntArrayRef shape, std::int64_t fan_in, at::Generator& gen) const {
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    return empty(shape).uniform_(-bound, bound, gen);
  }
  // A linear layer's whole weight [out, in] and bias [out], as torch::nn::Linear initialises
  // them (kaiming-uniform with a = sqrt(5): bound 1/sqrt(in) for both).
  std::pair<at::Tensor, at::Tensor> linear(std::int64_t out, std::int64_t in,
                                           at::Generator& gen) const {
    at::Tensor weight = uniform({out, in}, in, gen);
    at::Tensor bias = uniform({out}, in, gen);
    return {weight, bias};
  }

 private:
  bool scratch_;
};

// In the target's layout (a channels-last convolution weight stays channels-last), or into it.
void assign(at::Tensor& target, const at::Tensor& value, bool in_place) {
  at::NoGradGuard no_grad;
  if (in_place) {
    target.copy_(value);
    return;
  }
  target.set_data(
      value.to(target.device(), target.scalar_type()).contiguous(target.suggest_memory_format()));
}

}  // namespace

Materializer::Materializer(std::uint64_t seed, AdjustInitial adjust)
    : seed_(seed), adjust_(std::move(adjust)) {}

void Materializer::materialize(torch::nn::Module& root, const std::string& prefix, bool in_place) {
  for (const auto& item : root.named_modules(prefix, /*include_self=*/true)) {
    torch::nn::Module& module = *item.value();
    if (done(module)) continue;
    if (module.named_parameters(false).is_empty() && module.named_buffers(false).is_empty()) {
      continue;  // a container
    }
    leaf(item.key(), module, in_place);
    done_.insert(&module);
  }
}

namespace {

// A leaf module's whole initial values by tensor name, and, for a tensor-parallel layer, the cut
// that keeps this rank's part of each.
struct Drawn {
  std::vector<std::pair<std::string, at::Tensor>> values;
  std::function<at::Tensor(const std::string&, const at::Tensor&)> cut;
};

Drawn draw_values(const std::string& name, torch::nn::Module& module, const Values& draw,
                  at::Generator& gen) {
  Drawn d;
  const auto ones = [](const at::Tensor& like) { return at::ones(like.sizes()); };
  const auto zeros = [](const at::Tensor& like) { return at::zeros(like.sizes(), like.dtype()); };
  if (auto* linear = module.as<torch::nn::Linear>()) {
    auto [w, b] = draw.linear(linear->weight.size(0), linear->weight.size(1), gen);
    d.values = {{"weight", w}, {"bias", b}};
  } else if (auto* column = module.as<pipeline::ColumnParallelLinear>()) {
    const bool split = column->kept().defined();
    auto [w, b] =
        draw.linear(split ? column->whole() : column->weight.size(0), column->weight.size(1), gen);
    d.values = {{"weight", w}, {"bias", b}};
    if (split)
      d.cut = [k = column->kept()](const std::string&, const at::Tensor& v) {
        return v.index_select(0, k);
      };
  } else if (auto* row = module.as<pipeline::RowParallelLinear>()) {
    const bool split = row->kept().defined();
    auto [w, b] = draw.linear(row->weight.size(0), split ? row->whole() : row->weight.size(1), gen);
    d.values = {{"weight", w}, {"bias", b}};
    if (split)
      d.cut = [k = row->kept()](const std::string& t, const at::Tensor& v) {
        return t == "weight" ? v.index_select(1, k) : v;
      };
  } else if (module.as<torch::nn::Conv1d>() || module.as<torch::nn::Conv2d>() ||
             module.as<torch::nn::Conv3d>()) {
    // A copy (one more reference to the same tensor): the dictionary named_parameters() returns
    // dies with this statement, and a reference into it would dangle (ASan: heap-use-after-free).
    const at::Tensor weight = module.named_parameters(false)["weight"];
    const std::int64_t fan_in = weight.numel() / weight.size(0);
    d.values = {{"weight", draw.uniform(weight.sizes(), fan_in, gen)},
                {"bias", draw.uniform({weight.size(0)}, fan_in, gen)}};
  } else if (auto* embedding = module.as<torch::nn::Embedding>()) {
    d.values = {{"weight", draw.empty(embedding->weight.sizes()).normal_(0.0, 1.0, gen)}};
  } else if (module.as<torch::nn::LayerNorm>() || module.as<torch::nn::BatchNorm1d>() ||
             module.as<torch::nn::BatchNorm2d>() || module.as<torch::nn::BatchNorm3d>()) {
    for (const auto& p : module.named_parameters(false)) {
      d.values.emplace_back(p.key(), p.key() == "weight" ? ones(p.value()) : zeros(p.value()));
    }
    for (const auto& b : module.named_buffers(false)) {
      d.values.emplace_back(b.key(), b.key() == "running_var" ? ones(b.value()) : zeros(b.value()));
    }
  } else {
    COHORT_THROW(ConfigError, "model.materialize = own: module '", name, "' (", module.name(),
                 ") has no per-module initialisation; set model.materialize = whole");
  }
  return d;
}

}  // namespace

void Materializer::leaf(const std::string& name, torch::nn::Module& module, bool in_place) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(module_seed(seed_, name));
  Drawn drawn = draw_values(name, module, Values(in_place), gen);
  auto params = module.named_parameters(false);
  auto buffers = module.named_buffers(false);
  for (auto& [tensor, value] : drawn.values) {
    at::Tensor* target = params.find(tensor);
    if (target == nullptr) target = buffers.find(tensor);
    if (target == nullptr) continue;  // a bias the module was built without
    if (adjust_) adjust_(name, tensor, value, gen);
    assign(*target, drawn.cut ? drawn.cut(tensor, value) : value, in_place);
  }
}

}  // namespace cohort::models
