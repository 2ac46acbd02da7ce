// Node fault reports: <train.run_dir>/node_faults/<node>.fault, filed by a failing rank and read
// (then removed) by the supervisor's requeue (supervision.hpp).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/ops/supervision.hpp"

namespace cohort::ops {

// The run's settings by their own names.
using namespace ::cohort::settings;  // NOLINT(google-build-using-namespace)

namespace {

constexpr const char* kFaultSuffix = ".fault";
constexpr std::size_t kMaxFaultBytes = 4096;
constexpr std::size_t kMaxFaultReports = 1024;

// A node name as Slurm writes one (letters, digits, '-', '_', '.'; not starting with '.'): it
// becomes a file name here and an entry of the job's excluded node list there.
bool valid_node_name(const std::string& name) {
  if (name.empty() || name.size() > 255 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

}  // namespace

std::vector<slurm::FailedNode> read_fault_reports(const std::string& dir,
                                                  std::vector<std::string>& paths) {
  std::vector<slurm::FailedNode> nodes;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const auto path = entry.path();
    if (path.extension() != kFaultSuffix || !entry.is_regular_file(error) ||
        !valid_node_name(path.stem().string())) {
      continue;
    }
    if (nodes.size() == kMaxFaultReports) break;
    std::string problem;
    try {
      problem = io::read_small_file(path.string(), kMaxFaultBytes);
    } catch (const IoError& e) {  // said, not swallowed: that node is not excluded
      std::fprintf(stderr, "cohort: warning: %s\n", e.what());
      continue;
    }
    problem.erase(std::remove(problem.begin(), problem.end(), '\n'), problem.end());
    nodes.push_back({path.stem().string(), problem.empty() ? "node fault" : problem});
    paths.push_back(path.string());
  }
  return nodes;
}

void report_node_fault(const TrainConfig& config, const std::string& node,
                       const std::string& problem) noexcept {
  try {
    COHORT_CHECK(valid_node_name(node), EnvironmentError, "node name '", node,
                 "' is not one Slurm gives");
    const std::string dir = config.train.run_dir + "/node_faults";
    io::make_directories(dir);
    io::write_file_atomically(dir + "/" + node + kFaultSuffix,
                              problem.substr(0, kMaxFaultBytes - 1) + "\n",
                              io::Durability::kAtomic);
  } catch (const std::exception& e) {  // said: the supervisor then cannot exclude this node
    std::fprintf(stderr, "cohort: warning: cannot report the fault of node %s: %s\n", node.c_str(),
                 e.what());
  }
}

}  // namespace cohort::ops
