#include "cohort/comm/device.hpp"

#include <atomic>

#include "cohort/error.hpp"
#include "nccl/nccl_factory.hpp"

namespace cohort::comm {
namespace {

// The rank's ordinal, -1 for none: written once at start-up, read by every thread Cohort starts.
std::atomic<int> rank_ordinal{-1};

}  // namespace

bool cuda_compiled() { return nccl::compiled(); }

void set_rank_device(std::optional<int> ordinal) {
  if (!ordinal) {
    rank_ordinal = -1;
    return;
  }
  COHORT_CHECK(*ordinal >= 0, ConfigError, "the rank's GPU ordinal is ", *ordinal,
               ": it must be 0 or more");
  nccl::set_current_device(*ordinal);
  rank_ordinal = *ordinal;
}

int cuda_runtime_devices() { return nccl::runtime_devices(); }

std::optional<int> rank_device() {
  const int ordinal = rank_ordinal;
  if (ordinal < 0) return std::nullopt;
  return ordinal;
}

void make_rank_device_current() noexcept {
  const int ordinal = rank_ordinal;
  if (ordinal >= 0) nccl::try_set_current_device(ordinal);
}

std::optional<int> current_device() { return nccl::current_device(); }

}  // namespace cohort::comm
