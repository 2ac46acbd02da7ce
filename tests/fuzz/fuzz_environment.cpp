// Fuzz target: launcher values (SLURM_TASKS_PER_NODE's grammar, hostlists through libslurm, the
// parallel layout's arithmetic). Nothing may expand beyond kMaxHostlistHosts or divide by zero.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cohort/env/hostlist.hpp"
#include "cohort/env/parallel_layout.hpp"
#include "fuzz_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 12) return 0;
  int numbers[3];
  for (int i = 0; i < 3; ++i) {
    std::uint32_t v = 0;
    for (int b = 0; b < 4; ++b) v = (v << 8) | data[4 * i + b];
    numbers[i] = static_cast<int>(v);
  }
  const std::string text(reinterpret_cast<const char*>(data) + 12, size - 12);
  cohort::fuzz::expect_contract([&] {
    const auto counts = cohort::env::expand_tasks_per_node(text, "SLURM_TASKS_PER_NODE");
    if (counts.empty() || counts.size() > cohort::env::kMaxHostlistHosts) std::abort();
  });
  cohort::fuzz::expect_contract([&] {
    const auto hosts = cohort::env::expand_hostlist(text, "SLURM_JOB_NODELIST");
    if (hosts.empty() || hosts.size() > cohort::env::kMaxHostlistHosts) std::abort();
  });
  cohort::fuzz::expect_contract([&] {
    const auto layout =
        cohort::env::ParallelLayout::make(numbers[0], numbers[1], numbers[2], numbers[0] % 9);
    if (layout.world() != numbers[0]) std::abort();
  });
  return 0;
}
