// Which communication backends this build has and what they can see at run time.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace cohort::comm {

struct BackendInfo {
  std::string name;  // "mpi", "nccl"
  bool compiled = false;
  std::string version;  // library version, when compiled in
  int devices = 0;      // accelerators visible (CUDA devices for NCCL)
  std::string detail;   // why there are no devices, or other notes
  std::string cuda;     // NCCL: the CUDA runtime and driver versions ("runtime 12.8, driver 13.0")
};

std::vector<BackendInfo> backend_info();
// One of `cohort env --json`'s "backends": name, compiled, version, devices, detail, cuda.
nlohmann::json to_json(const BackendInfo& info);

}  // namespace cohort::comm
