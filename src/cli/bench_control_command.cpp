// `cohort bench control`: the control paths' cost at this launch's size (docs/scaling.md).
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cohort/bench/control.hpp"
#include "cohort/bench/json.hpp"
#include "cohort/comm/mpi_session.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"
#include "command.hpp"
#include "options.hpp"

namespace cohort::cli {

namespace po = boost::program_options;

int bench_control(const std::vector<std::string>& args, int* argc, char*** argv) {
  bench::ControlBenchOptions o;
  o.dir = "/tmp";
  po::options_description desc("cohort bench control options");
  desc.add_options()("help,h", "show this help")("json", "print JSON")(
      "tensors", po::value(&o.tensors)->default_value(o.tensors), "checkpoint tensors per rank")(
      "repeats", po::value(&o.repeats)->default_value(o.repeats), "medians of this many")(
      "dir", path_value(&o.dir, PathKind::kOutputDirectory)->default_value(o.dir),
      "where the checkpoint is written");
  const auto parsed =
      parse_or_help(args, desc, "usage: cohort launch -n N -- cohort bench control [options]\n");
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  COHORT_CHECK(o.tensors >= 1 && o.tensors <= 100000 && o.repeats >= 1, UsageError,
               "cohort bench control: --tensors 1..100000, --repeats >= 1");
  const auto topology = env::detect(env::Environment::from_process());  // before MPI_Init
  comm::MpiSession session(argc, argv);
  const auto r = bench::bench_control(session, topology, o);
  if (session.rank() != 0) return 0;
  if (vm.count("json")) {
    std::cout << bench::to_json(r, o).dump(2) << "\n";
    return 0;
  }
  std::printf("control paths at %d ranks (%d checkpoint tensors per rank, each rank its own)\n",
              r.ranks, o.tensors);
  std::printf("  start-up (exec to MPI ready, slowest)  %9.3f s\n", r.startup_s);
  std::printf("  launcher check (verify)                %9.3f ms\n", r.verify_s * 1e3);
  std::printf("  checkpoint plan, gathered              %9.3f ms  %lld bytes to each rank\n",
              r.plan_s * 1e3, static_cast<long long>(r.plan_bytes));
  std::printf("  checkpoint plan, once per layout       %9.3f ms  8 bytes\n",
              r.plan_cached_s * 1e3);
  std::printf("  save of the tiny checkpoint            %9.3f ms  manifest %lld bytes\n",
              r.save_s * 1e3, static_cast<long long>(r.manifest_bytes));
  std::printf(
      "  monitor summary (gather to rank 0)     %9.3f ms  %lld bytes to rank 0, %lld to others\n",
      r.summary_s * 1e3, static_cast<long long>(r.summary_bytes),
      static_cast<long long>(r.summary_rank_bytes));
  std::printf("  ... shared with the nodes' endpoints   %9.3f ms  %lld bytes to each other rank\n",
              r.summary_shared_s * 1e3, static_cast<long long>(r.summary_shared_rank_bytes));
  return 0;
}

}  // namespace cohort::cli
