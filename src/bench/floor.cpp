#include "cohort/bench/floor.hpp"

namespace cohort::bench {

std::vector<Floor> floors(const DdpBenchResult& r) {
  return {{"DDP / (compute + all-reduce)", r.floor_ratio, 1.05, true}};
}

std::vector<Floor> floors(const CkptBenchResult& r) {
  return {{"sync save speed / raw write speed", r.write_ratio, 0.7, false},
          {"async save stall / sync save time", r.stall_share, 0.10, true},
          {"restart load time / raw read time", 1 / r.restart_load_ratio, 1.5, true}};
}

std::vector<Floor> floors(const MonitorBenchResult& r) {
  return {{"metrics on / off - 1 (overhead)", r.overhead, 0.02, true}};
}

}  // namespace cohort::bench
