// Fuzz target: a run's restart ledger, restarts.json (RestartLedger::load, src/slurm/
// restart_ledger.cpp), as `cohort supervise`, `cohort slurm requeue` and a preempted rank 0 read
// it for job 12. What loads holds counts in [0, 2^31 - 1) and a last failure at step -1 or later,
// and what it saves loads back the same.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "cohort/slurm/restart_ledger.hpp"
#include "fuzz_contract.hpp"

namespace slurm = cohort::slurm;

namespace {

const std::string& run_dir() {
  static const std::string dir = [] {
    std::string d = cohort::fuzz::scratch_path("ledger");
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

bool counts_in_range(const slurm::RestartLedger& ledger) {
  for (const std::int64_t n : {ledger.preemptions, ledger.failures, ledger.preflight_requeues}) {
    if (n < 0 || n >= std::numeric_limits<std::int32_t>::max()) return false;
  }
  return !ledger.last_failure || ledger.last_failure->step >= -1;
}

bool same(const slurm::RestartLedger& a, const slurm::RestartLedger& b) {
  return a.job == b.job && a.preemptions == b.preemptions && a.failures == b.failures &&
         a.preflight_requeues == b.preflight_requeues &&
         a.last_failure.has_value() == b.last_failure.has_value() &&
         (!a.last_failure || (a.last_failure->checkpoint == b.last_failure->checkpoint &&
                              a.last_failure->step == b.last_failure->step));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = slurm::ledger_path(run_dir());
  cohort::fuzz::write_scratch(path, data, size);
  cohort::fuzz::expect_contract([&] {
    const auto ledger = slurm::RestartLedger::load(path, "12");
    if (ledger.job != "12" || !counts_in_range(ledger)) std::abort();
    const std::string again = run_dir() + "/saved.json";
    ledger.save(again);
    if (!same(slurm::RestartLedger::load(again, "12"), ledger)) std::abort();
  });
  return 0;
}
