// `cohort bench topology`: the cost of a rank's start-up control path at scale, in one process.
// Launcher detection (env::detect) is run for the last task of an srun step of N nodes x T tasks
// (the environment Slurm gives it, nodelist "node[00001-N]" and "T(xN)"), and the node list's
// expansion and compression timed alone: every rank does this once at start-up, and its cost
// grows with the node count, not the ranks. Medians over --repeats runs.
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cohort/env/environment.hpp"
#include "cohort/env/hostlist.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"
#include "command.hpp"

namespace cohort::cli {

namespace po = boost::program_options;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double median_ms(int repeats, F&& f) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    f();
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

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

int bench_topology(const std::vector<std::string>& args) {
  int nodes = 10000, tasks = 4, repeats = 21;
  po::options_description desc("cohort bench topology options");
  desc.add_options()("help,h", "show this help")("json", "print JSON")(
      "nodes", po::value(&nodes)->default_value(nodes), "nodes in the step")(
      "tasks", po::value(&tasks)->default_value(tasks), "tasks per node")(
      "repeats", po::value(&repeats)->default_value(repeats), "timed runs (the median is kept)");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: cohort bench topology [options]\n" << desc;
    return 0;
  }
  COHORT_CHECK(nodes >= 1 && nodes <= 99999 && tasks >= 1 && tasks <= 1024 && repeats >= 1,
               UsageError,
               "cohort bench topology: --nodes 1..99999, --tasks 1..1024, --repeats >= 1");
  const std::string nodelist = "node[00001-" + std::to_string(100000 + nodes).substr(1) + "]";
  const env::Environment environment = last_task(nodes, tasks, nodelist);
  env::Topology topology;
  const double detect_ms = median_ms(repeats, [&] { topology = env::detect(environment); });
  std::vector<std::string> hosts;
  const double expand_ms = median_ms(repeats, [&] { hosts = env::expand_hostlist(nodelist); });
  std::string compressed;
  const double compress_ms =
      median_ms(repeats, [&] { compressed = env::compress_hostlist(hosts); });
  COHORT_CHECK(topology.rank == nodes * tasks - 1 && topology.node_count == nodes &&
                   static_cast<int>(hosts.size()) == nodes && compressed == nodelist,
               Error, "cohort bench topology: detection disagrees with the step it was given");
  if (vm.count("json")) {
    std::cout << json{{"nodes", nodes},
                      {"tasks_per_node", tasks},
                      {"ranks", nodes * tasks},
                      {"detect_ms", detect_ms},
                      {"expand_ms", expand_ms},
                      {"compress_ms", compress_ms},
                      {"rank", topology.rank},
                      {"node_index", topology.node_index},
                      {"hosts", topology.hosts.size()}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::printf(
      "topology of srun -N %d --ntasks-per-node %d (%d ranks), the last task, median of %d\n",
      nodes, tasks, nodes * tasks, repeats);
  std::printf("  env::detect          %8.3f ms (rank %d on node %d of %zu)\n", detect_ms,
              topology.rank, topology.node_index, topology.hosts.size());
  std::printf("  expand_hostlist      %8.3f ms (%zu hosts)\n", expand_ms, hosts.size());
  std::printf("  compress_hostlist    %8.3f ms\n", compress_ms);
  return 0;
}

}  // namespace cohort::cli
