// Fuzz target: a run's metrics.jsonl as `cohort report` and `cohort top` read it (RunFollower,
// then the report's rendering and top's frame, which index per-rank lists from the file).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cohort/monitor/report.hpp"
#include "cohort/monitor/run_history.hpp"
#include "fuzz_contract.hpp"

namespace {

const std::string& run_dir() {
  static const std::string dir = [] {
    std::string d = std::filesystem::temp_directory_path().string() + "/cohort-fuzz-metrics-" +
                    std::to_string(::getpid());
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    std::ofstream out(run_dir() + "/metrics.jsonl", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  cohort::fuzz::expect_contract([&] {
    const auto history = cohort::monitor::load_run(run_dir());
    const cohort::monitor::Thresholds thresholds;
    (void)cohort::monitor::render_report(history, thresholds);
    const std::string frame = cohort::monitor::render_top(history, thresholds, 0.0, 200);
    for (const char c : frame) {
      if (c == '\033') std::abort();  // an escape sequence would reach the terminal
    }
  });
  return 0;
}
