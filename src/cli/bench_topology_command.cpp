// `cohort bench topology` (bench/topology.hpp): the start-up control path's cost at scale.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cohort/bench/json.hpp"
#include "cohort/bench/topology.hpp"
#include "command.hpp"
#include "options.hpp"

namespace cohort::cli {

namespace po = boost::program_options;

int bench_topology(const std::vector<std::string>& args) {
  bench::TopologyBenchOptions o;
  po::options_description desc("cohort bench topology options");
  desc.add_options()("help,h", "show this help")("json", "print JSON")(
      "nodes", po::value(&o.nodes)->default_value(o.nodes), "nodes in the step")(
      "tasks", po::value(&o.tasks)->default_value(o.tasks), "tasks per node")(
      "repeats", po::value(&o.repeats)->default_value(o.repeats),
      "timed runs (the median is kept)");
  const auto parsed = parse_or_help(args, desc, "usage: cohort bench topology [options]\n");
  if (!parsed) return 0;
  const auto r = bench::bench_topology(o);
  if (parsed->count("json")) {
    std::cout << bench::to_json(r, o).dump(2) << "\n";
    return 0;
  }
  std::printf(
      "topology of srun -N %d --ntasks-per-node %d (%d ranks), the last task, median of %d\n",
      o.nodes, o.tasks, o.nodes * o.tasks, o.repeats);
  std::printf("  env::detect          %8.3f ms (rank %d on node %d of %zu)\n", r.detect_ms, r.rank,
              r.node_index, r.hosts);
  std::printf("  expand_hostlist      %8.3f ms (%zu hosts)\n", r.expand_ms, r.expanded);
  std::printf("  compress_hostlist    %8.3f ms\n", r.compress_ms);
  return 0;
}

}  // namespace cohort::cli
