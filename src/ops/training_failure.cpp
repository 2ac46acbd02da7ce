// The device-fault path of a training rank (supervision.hpp, on_training_failure): apart from
// node_faults.cpp, which the node-fault fuzz target compiles without MPI.
#include <cstdio>
#include <string>

#include "cohort/comm/mpi_session.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"
#include "cohort/ops/decisions.hpp"
#include "cohort/ops/supervision.hpp"

namespace cohort::ops {

void on_training_failure(const settings::TrainConfig& config, const env::Topology& topology,
                         comm::MpiSession& session, const std::exception& error) {
  switch (classify_failure(error)) {
    case FailureKind::kOther:
      return;
    case FailureKind::kConfiguration:
      throw ConfigError(error.what());
    case FailureKind::kNodeFault:
      break;
  }
  const std::string node = topology.host.empty() ? env::hostname() : topology.host;
  report_node_fault(config, node, std::string("device fault: ") + error.what());
  std::fprintf(stderr, "cohort: error: rank %d on node %s: device fault: %s\n", session.rank(),
               node.c_str(), error.what());
  session.abort(static_cast<int>(ExitCode::kNodeFault));
}

}  // namespace cohort::ops
