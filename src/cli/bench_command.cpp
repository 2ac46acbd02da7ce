// `cohort bench allreduce|ddp [options] [--json]`: benchmarks reported as ratios against a
// baseline measured in the same run (raw MPI_Allreduce; compute plus one raw all-reduce).
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cohort/comm/allocator.hpp"
#include "cohort/comm/bench.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/error.hpp"
#include "command.hpp"

namespace po = boost::program_options;
using nlohmann::json;

namespace cohort::cli {
namespace {

int bench_allreduce(const std::vector<std::string>& args, int* argc, char*** argv) {
  comm::AllreduceBenchOptions options;
  po::options_description desc("cohort bench allreduce options");
  desc.add_options()("help,h", "show this help")("json", "print JSON")(
      "min-bytes", po::value<std::size_t>(&options.min_bytes)->default_value(options.min_bytes),
      "smallest message")(
      "max-bytes", po::value<std::size_t>(&options.max_bytes)->default_value(options.max_bytes),
      "largest message (sizes grow 4x)")(
      "seconds", po::value<double>(&options.seconds_per_size)->default_value(1.0),
      "time budget per size");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: cohort launch -n N -- cohort bench allreduce [options]\n" << desc;
    return 0;
  }
  comm::MpiSession session(argc, argv);
  auto communicator = comm::make_communicator(session, comm::Backend::kMpi);
  const auto rows = comm::bench_allreduce(*communicator, session, options);
  if (session.rank() != 0) return 0;
  const auto tuning = comm::tune_allocator();
  if (vm.count("json")) {
    json out = {
        {"ranks", session.size()}, {"malloc_tuning", tuning.reason}, {"rows", json::array()}};
    for (const auto& r : rows) {
      out["rows"].push_back({{"bytes", r.bytes},
                             {"iterations", r.iterations},
                             {"cohort_ms", r.cohort_ms},
                             {"cohort_async_ms", r.cohort_async_ms},
                             {"raw_mpi_ms", r.raw_ms},
                             {"algbw_gbs", r.algbw_gbs},
                             {"busbw_gbs", r.busbw_gbs},
                             {"ratio_vs_raw", r.ratio}});
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("all-reduce, float32 sum, %d ranks (malloc tuning: %s)\n", session.size(),
              tuning.reason);
  std::printf("%12s %6s %11s %11s %11s %10s %10s %8s\n", "bytes", "iters", "cohort ms", "async ms",
              "raw mpi ms", "algbw GB/s", "busbw GB/s", "raw/coh");
  for (const auto& r : rows) {
    std::printf("%12zu %6d %11.4f %11.4f %11.4f %10.3f %10.3f %8.3f\n", r.bytes, r.iterations,
                r.cohort_ms, r.cohort_async_ms, r.raw_ms, r.algbw_gbs, r.busbw_gbs, r.ratio);
  }
  return 0;
}

}  // namespace

int run_bench(const std::vector<std::string>& args, int* argc, char*** argv) {
  const std::string what = args.empty() ? "" : args.front();
  const std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (what == "allreduce") return bench_allreduce(rest, argc, argv);
  COHORT_THROW(UsageError, "cohort bench: unknown benchmark '", what, "' (allreduce)");
}

}  // namespace cohort::cli
