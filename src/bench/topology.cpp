#include "cohort/bench/topology.hpp"

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cohort/env/environment.hpp"
#include "cohort/env/hostlist.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"
#include "common/stats.hpp"

namespace cohort::bench {
namespace {

// The environment of the last task of `srun -N nodes --ntasks-per-node tasks`.
env::Environment last_task(int nodes, int tasks, const std::string& nodelist) {
  const std::string world = std::to_string(nodes * tasks);
  const std::string per_node = std::to_string(tasks) + "(x" + std::to_string(nodes) + ")";
  char last_host[32];
  std::snprintf(last_host, sizeof last_host, "node%05d", nodes);
  return env::Environment(
      std::map<std::string, std::string>{{"SLURM_JOB_ID", "1"},
                                         {"SLURM_JOBID", "1"},
                                         {"SLURM_STEP_ID", "0"},
                                         {"SLURM_STEPID", "0"},
                                         {"SLURM_PROCID", std::to_string(nodes * tasks - 1)},
                                         {"SLURM_LOCALID", std::to_string(tasks - 1)},
                                         {"SLURM_NODEID", std::to_string(nodes - 1)},
                                         {"SLURM_NTASKS", world},
                                         {"SLURM_NPROCS", world},
                                         {"SLURM_STEP_NUM_TASKS", world},
                                         {"SLURM_STEP_NUM_NODES", std::to_string(nodes)},
                                         {"SLURM_JOB_NODELIST", nodelist},
                                         {"SLURM_NODELIST", nodelist},
                                         {"SLURM_STEP_NODELIST", nodelist},
                                         {"SLURM_STEP_TASKS_PER_NODE", per_node},
                                         {"SLURM_TASKS_PER_NODE", per_node},
                                         {"SLURMD_NODENAME", last_host},
                                         {"SLURM_JOB_NAME", "bench"}});
}

}  // namespace

TopologyBenchResult bench_topology(const TopologyBenchOptions& o) {
  COHORT_CHECK(
      o.nodes >= 1 && o.nodes <= 99999 && o.tasks >= 1 && o.tasks <= 1024 && o.repeats >= 1,
      UsageError, "cohort bench topology: --nodes 1..99999, --tasks 1..1024, --repeats >= 1");
  const std::string nodelist = "node[00001-" + std::to_string(100000 + o.nodes).substr(1) + "]";
  const env::Environment environment = last_task(o.nodes, o.tasks, nodelist);
  TopologyBenchResult r;
  env::Topology topology;
  r.detect_ms = stats::median_ms(o.repeats, [&] { topology = env::detect(environment); });
  std::vector<std::string> hosts;
  r.expand_ms = stats::median_ms(o.repeats, [&] { hosts = env::expand_hostlist(nodelist); });
  std::string compressed;
  r.compress_ms = stats::median_ms(o.repeats, [&] { compressed = env::compress_hostlist(hosts); });
  COHORT_CHECK(topology.rank == o.nodes * o.tasks - 1 && topology.node_count == o.nodes &&
                   static_cast<int>(hosts.size()) == o.nodes && compressed == nodelist,
               Error, "cohort bench topology: detection disagrees with the step it was given");
  r.rank = topology.rank;
  r.node_index = topology.node_index;
  r.hosts = topology.hosts.size();
  r.expanded = hosts.size();
  return r;
}

}  // namespace cohort::bench
