// `cohort doctor`: pre-flight checks of the nodes a training will run on, before it spends any
// training time on them (issue 24). One task per node runs check_node() (its own checks); the
// command then adds the checks among nodes (clock skew against the batch node, an all-reduce's
// bandwidth) and rank 0 prints the DoctorReport.
//
// Checks, in the order of their exit codes (80 + index of the first that fails):
//   run_dir  train.run_dir writable (a probe file written, synced, removed) with the free space
//            one more checkpoint needs (parameters x 4 bytes x (1 + optimizer states));
//   dataset  data.path (and data.val_path) opened and validated as training does, every shard
//            file read at its start and end;
//   memory   MemAvailable against the parameters, gradients and optimizer state of this node's
//            training ranks (after ZeRO, pipeline and tensor splits; activations not counted);
//   gpu      NVML: uncorrected ECC errors, pending page retirement, hardware slowdown (a node
//            without the NVIDIA driver skips it, saying so);
//   slurm    libslurm within the controller's RPC window (inside a job);
//   clock    this node's clock against the batch node's, within kMaxClockSkew;
//   network  this node's MPI loopback, and an all-reduce among the nodes (job-wide), each
//            against slurm.preflight_bandwidth.
// Fault switch (tests, docs/slurm.md): debug.doctor_fault = NODE:CHECK fails CHECK on NODE.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cohort/comm/mpi_session.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/slurm/nodes.hpp"

namespace cohort::ops {

inline constexpr const char* kDoctorChecks[] = {"run_dir", "dataset", "memory", "gpu",
                                                "slurm",   "clock",   "network"};
inline constexpr int kDoctorExitBase = 80;
inline constexpr std::chrono::milliseconds kMaxClockSkew{1000};

enum class CheckStatus { kPass, kFail, kSkip };

struct CheckResult {
  std::string name;  // one of kDoctorChecks
  CheckStatus status = CheckStatus::kPass;
  std::string detail;
};

struct NodeReport {
  std::string node;
  std::vector<CheckResult> checks;
};

struct DoctorOptions {
  int ranks = 1;           // the training's world size
  int ranks_per_node = 1;  // its ranks on one node
};

// This node's own checks: run_dir, dataset, memory, gpu, slurm (debug.doctor_fault applied).
NodeReport check_node(const settings::TrainConfig& config, const DoctorOptions& options,
                      const std::string& node);
// Marks `check` of `report` failed when debug.doctor_fault names it and the node.
void apply_fault_switch(const settings::TrainConfig& config, NodeReport& report,
                        const std::string& check);

struct DoctorReport {
  std::vector<NodeReport> nodes;  // in node order; the first is the batch node
  CheckResult network;            // the all-reduce among the nodes

  // The nodes with a failing check, each with its first: "pre-flight run_dir: <detail>".
  std::vector<slurm::FailedNode> failed_nodes() const;
  // 0, or 80 + the index (kDoctorChecks) of the first failing check, nodes before the network.
  int exit_code() const;
};

// The whole doctor, collective over `session` (one rank per node): this node's checks, its
// loopback, then the clocks and an all-reduce among the nodes; rank 0 gets the report (the other
// ranks an empty one).
DoctorReport run_doctor(const settings::TrainConfig& config, const DoctorOptions& options,
                        const comm::MpiSession& session, const std::string& node);

nlohmann::json to_json(const NodeReport& report);
nlohmann::json to_json(const DoctorReport& report);
std::string to_text(const DoctorReport& report);
// A node's report as gathered from another rank, or a report read back by `cohort supervise`:
// untrusted, an IoError naming `where` and the field.
NodeReport node_report_from_json(const nlohmann::json& json, const std::string& where);
DoctorReport doctor_report_from_json(const nlohmann::json& json, const std::string& where);
// The report `cohort doctor --output` wrote (at most 64 MiB, JSON depth-checked).
DoctorReport read_doctor_report(const std::string& path);

std::string to_string(CheckStatus status);

}  // namespace cohort::ops
