// `cohort bench control`: the control paths' cost at this launch's size (docs/scaling.md).
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cohort/comm/mpi_session.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"
#include "cohort/train/bench_control.hpp"
#include "command.hpp"

namespace cohort::cli {

namespace po = boost::program_options;

int bench_control(const std::vector<std::string>& args, int* argc, char*** argv) {
  train::ControlBenchOptions o;
  o.dir = "/tmp";
  po::options_description desc("cohort bench control options");
  desc.add_options()("help,h", "show this help")("json", "print JSON")(
      "tensors", po::value(&o.tensors)->default_value(o.tensors), "checkpoint tensors per rank")(
      "repeats", po::value(&o.repeats)->default_value(o.repeats), "medians of this many")(
      "dir", path_value(&o.dir, PathKind::kOutputDirectory)->default_value(o.dir),
      "where the checkpoint is written");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: cohort launch -n N -- cohort bench control [options]\n" << desc;
    return 0;
  }
  COHORT_CHECK(o.tensors >= 1 && o.tensors <= 100000 && o.repeats >= 1, UsageError,
               "cohort bench control: --tensors 1..100000, --repeats >= 1");
  const auto topology = env::detect(env::Environment::from_process());  // before MPI_Init
  comm::MpiSession session(argc, argv);
  const auto r = train::bench_control(session, topology, o);
  if (session.rank() != 0) return 0;
  if (vm.count("json")) {
    const nlohmann::json out = {{"ranks", r.ranks},
                                {"tensors_per_rank", o.tensors},
                                {"startup_s", r.startup_s},
                                {"verify_s", r.verify_s},
                                {"plan_s", r.plan_s},
                                {"plan_bytes", r.plan_bytes},
                                {"plan_cached_s", r.plan_cached_s},
                                {"manifest_bytes", r.manifest_bytes},
                                {"save_s", r.save_s},
                                {"summary_fields", r.summary_fields},
                                {"summary_bytes", r.summary_bytes},
                                {"summary_rank_bytes", r.summary_rank_bytes},
                                {"summary_shared_rank_bytes", r.summary_shared_rank_bytes},
                                {"summary_s", r.summary_s},
                                {"summary_shared_s", r.summary_shared_s}};
    std::cout << out.dump(2) << "\n";
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
