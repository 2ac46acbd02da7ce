#include "cohort/comm/backend_info.hpp"

#include <nlohmann/json.hpp>

#include "cohort/comm/mpi_session.hpp"
#include "nccl/nccl_info.hpp"

namespace cohort::comm {

std::vector<BackendInfo> backend_info() {
  BackendInfo mpi;
  mpi.name = "mpi";
  mpi.compiled = true;
  mpi.version = MpiSession::library_version();
  mpi.detail = "CPU tensors";
  return {mpi, nccl::info()};
}

nlohmann::json to_json(const BackendInfo& b) {
  return {{"name", b.name},       {"compiled", b.compiled}, {"version", b.version},
          {"devices", b.devices}, {"detail", b.detail},     {"cuda", b.cuda}};
}

}  // namespace cohort::comm
