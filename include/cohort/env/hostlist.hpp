// Slurm hostlists ("n[001-003,7],gpu-a[1-2]") expanded and compressed by libslurm's own hostlist
// API, so that the rules are exactly Slurm's.
#pragma once

#include <string>
#include <vector>

namespace cohort::env {

// The most hosts (or tasks-per-node entries) one expression may expand to: far above any
// machine's node count, far below what would exhaust a login node's memory (docs/exit-codes.md).
inline constexpr int kMaxHostlistHosts = 1 << 20;

// Expands a hostlist expression into host names, in Slurm's order. Throws EnvironmentError when
// libslurm rejects the expression or it names more than kMaxHostlistHosts hosts; `origin` (e.g. the
// variable name) is named in the message.
std::vector<std::string> expand_hostlist(const std::string& expression,
                                         const std::string& origin = "hostlist");

// Compresses host names into Slurm's ranged form ("n[1-3]").
std::string compress_hostlist(const std::vector<std::string>& hosts);

// Parses Slurm's tasks-per-node grammar ("2(x3),1" -> {2,2,2,1}). Throws EnvironmentError naming
// `origin` on malformed input.
std::vector<int> expand_tasks_per_node(const std::string& value, const std::string& origin);

}  // namespace cohort::env
