#include "ckpt/staging.hpp"

#include <sys/mman.h>

#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <c10/core/StorageImpl.h>

#include <cstdint>
#include <map>
#include <utility>

namespace cohort::ckpt {
namespace {

// A host tensor alone in a storage it fills: its storage can change hands.
bool owns_storage(const at::Tensor& t, const std::map<const void*, int>& holders) {
  if (!t.device().is_cpu() || !t.is_contiguous() || t.storage_offset() != 0 ||
      !t.storage().data()) {
    return false;
  }
  const auto* impl = t.storage().unsafeGetStorageImpl();
  return holders.at(impl) == 1 &&
         static_cast<std::size_t>(t.numel()) * t.element_size() == t.storage().nbytes();
}

at::Tensor host_like(const at::Tensor& like) {
  at::Tensor buffer = at::empty(
      like.sizes(), like.options().device(at::kCPU).memory_format(at::MemoryFormat::Contiguous));
  advise_huge_pages(buffer);
  return buffer;
}

}  // namespace

// 2 MiB faults cost a fraction of 512 small ones (a 168 MB checkpoint: 41,000), and in a VM a
// first touch costs a host fault. Advice only: a kernel without THP ("never") ignores it.
void advise_huge_pages(const at::Tensor& buffer) {
  constexpr std::uintptr_t kHuge = 2u << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(buffer.data_ptr());
  const std::uintptr_t end = begin + static_cast<std::uintptr_t>(buffer.nbytes());
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1), last = end & ~(kHuge - 1);
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

Staging::Staging(const std::vector<NamedTensor>& into) {
  std::map<const void*, int> holders;  // wanted tensors per storage
  for (const auto& want : into) {
    if (want.tensor.has_storage()) ++holders[want.tensor.storage().unsafeGetStorageImpl()];
  }
  for (const auto& want : into) {
    const at::Tensor& t = want.tensor;
    if (want.fresh && t.device().is_cpu() && t.is_contiguous()) {
      advise_huge_pages(t);  // not touched yet either
      buffers_.push_back(t);
      commits_.push_back(Commit::kNone);
    } else if (!want.part && t.has_storage() && owns_storage(t, holders)) {
      buffers_.push_back(host_like(t));
      commits_.push_back(Commit::kSwap);
    } else {
      buffers_.push_back(host_like(t));
      commits_.push_back(Commit::kCopy);
    }
  }
}

void Staging::replace(std::size_t i, at::Tensor buffer) {
  buffers_[i] = std::move(buffer);
  commits_[i] = Commit::kCopy;
}

void Staging::commit(std::vector<NamedTensor>& into) {
  at::NoGradGuard no_grad;  // parameters are leaves that require grad
  for (std::size_t i = 0; i < into.size(); ++i) {
    at::Tensor& target = into[i].tensor;
    if (commits_[i] == Commit::kCopy) {
      target.copy_(buffers_[i]);
    } else if (commits_[i] == Commit::kSwap) {
      c10::StorageImpl* mine = buffers_[i].storage().unsafeGetStorageImpl();
      c10::StorageImpl* theirs = target.storage().unsafeGetStorageImpl();
      c10::DataPtr loaded = mine->set_data_ptr(c10::DataPtr(nullptr, mine->device()));
      mine->set_data_ptr(theirs->set_data_ptr(std::move(loaded)));  // freed with the buffer
    }
  }
}

}  // namespace cohort::ckpt
