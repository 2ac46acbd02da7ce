#include "models/build_budget.hpp"

#include <c10/core/CPUAllocator.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "cohort/env/environment.hpp"
#include "cohort/error.hpp"
#include "common/torch_compat.hpp"

namespace cohort::models {

namespace {

// The bytes a budget's allocations hold, shared with their deleters (a tensor may outlive it).
struct Held {
  std::atomic<std::uint64_t> bytes{0};
};

struct Counted {
  c10::DataPtr inner;
  std::shared_ptr<Held> held;
  std::uint64_t bytes;
};

void release_counted(void* context) {
  const std::unique_ptr<Counted> counted(static_cast<Counted*>(context));
  counted->held->bytes -= counted->bytes;
}

std::string gib(std::uint64_t bytes) {
  const bool large = bytes >= (1ull << 30);
  char text[48];
  std::snprintf(text, sizeof text, large ? "%.1f GiB" : "%.1f MiB",
                static_cast<double>(bytes) / static_cast<double>(large ? 1ull << 30 : 1ull << 20));
  return text;
}

// The memory limit of this process's cgroup (v2 memory.max, v1 memory.limit_in_bytes), UINT64_MAX
// when there is none or it cannot be read.
std::uint64_t cgroup_memory_limit() {
  std::ifstream groups("/proc/self/cgroup");
  std::uint64_t limit = UINT64_MAX;
  for (std::string line; std::getline(groups, line);) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    std::string file;
    if (controllers.empty()) file = "/sys/fs/cgroup" + path + "/memory.max";  // v2
    if (controllers == "memory") file = "/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes";
    if (file.empty()) continue;
    std::ifstream in(file);
    std::uint64_t value = 0;
    if (in >> value) limit = std::min(limit, value);  // "max" reads as no number: no limit
  }
  return limit;
}

// The ranks on this node as the launcher says (the first of these set to a count; 1 when none
// is): not env::detect(), which a singleton's MPI start-up leaves without a world size.
std::uint64_t local_ranks() {
  const auto environment = env::Environment::from_process();
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_LOCAL_SIZE", "MPI_LOCALNRANKS",
                           "LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE"}) {
    const auto value = environment.get(name);
    std::uint64_t count = 0;
    // SLURM_NTASKS_PER_NODE may read "4(x2)": its first count is this node's or alike.
    if (value &&
        std::from_chars(value->data(), value->data() + value->size(), count).ptr != value->data() &&
        count > 0 && count < (1u << 24)) {
      return count;
    }
  }
  return 1;
}

// The highest priority, as SkeletonScope's: the restore must be allowed to put the previous back.
constexpr std::uint8_t kPriority = 255;

}  // namespace

class BuildBudget::Allocator final : public torch_compat::AllocatorBase {
 public:
  Allocator(std::uint64_t budget, bool per_allocation, std::string what)
      : real_(c10::GetCPUAllocator()),
        owner_(std::this_thread::get_id()),
        budget_(budget),
        per_allocation_(per_allocation),
        what_(std::move(what)),
        held_(std::make_shared<Held>()) {}
  c10::Allocator* real() const { return real_; }

 protected:
  c10::DataPtr make(std::size_t n) const override {
    if (std::this_thread::get_id() != owner_) return real_->allocate(n);
    const std::uint64_t after = per_allocation_ ? n : held_->bytes.load() + n;
    COHORT_CHECK(n <= budget_ && after <= budget_, ConfigError, what_,
                 ": building it would hold more than ", gib(budget_), " (a tensor of ", gib(n),
                 per_allocation_ ? "" : std::string(" after ") + gib(held_->bytes.load()),
                 "): refused before allocating; check the sizes it is built from, or raise "
                 "model.max_build_gib");
    auto counted = std::make_unique<Counted>(Counted{real_->allocate(n), held_, n});
    held_->bytes += n;
    void* data = counted->inner.get();
    const c10::Device device = counted->inner.device();
    return c10::DataPtr(data, counted.release(), &release_counted, device);
  }

 private:
  c10::Allocator* real_;
  std::thread::id owner_;
  std::uint64_t budget_;
  bool per_allocation_;
  std::string what_;
  std::shared_ptr<Held> held_;
};

BuildBudget::BuildBudget(std::uint64_t bytes, bool per_allocation, std::string what)
    : allocator_(std::make_unique<Allocator>(bytes, per_allocation, std::move(what))) {
  c10::SetCPUAllocator(allocator_.get(), kPriority);
}

BuildBudget::~BuildBudget() {
  c10::SetCPUAllocator(allocator_->real(), kPriority);
  // An allocate() in flight on another thread may have read this allocator before the restore
  // (it passes such calls straight on): kept for the process's life, as SkeletonScope's is.
  static std::vector<std::unique_ptr<Allocator>> retired;
  static std::mutex retired_mutex;
  std::lock_guard<std::mutex> lock(retired_mutex);
  retired.push_back(std::move(allocator_));
}

std::uint64_t BuildBudget::bytes_for(double max_build_gib) {
  if (max_build_gib > 0) {
    const double bytes = max_build_gib * static_cast<double>(1ull << 30);
    return bytes >= 1.8e19 ? UINT64_MAX : static_cast<std::uint64_t>(bytes);
  }
  // What this process may hold: the host's memory, the job's cgroup limit (Slurm's
  // --mem), the address space limit; shared by the ranks of the node, each of which builds.
  std::uint64_t memory = UINT64_MAX;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) {
    memory = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  }
  memory = std::min(memory, cgroup_memory_limit());
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    memory = std::min<std::uint64_t>(memory, limit.rlim_cur);
  }
  return memory / local_ranks();
}

}  // namespace cohort::models
