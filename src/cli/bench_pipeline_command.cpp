// `cohort bench pipeline`: each schedule's measured bubble against (p - 1) / (M + p - 1).
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cohort/comm/factory.hpp"
#include "cohort/comm/mpi_session.hpp"
#include "cohort/error.hpp"
#include "cohort/pipeline/bench.hpp"
#include "command.hpp"
#include "options.hpp"

namespace cohort::cli {

namespace po = boost::program_options;

int bench_pipeline(const std::vector<std::string>& args, int* argc, char*** argv) {
  pipeline::PipelineBenchOptions o;
  po::options_description desc("cohort bench pipeline options");
  desc.add_options()("help,h", "show this help")("json", "print JSON")(
      "micro-batches", po::value(&o.micro_batches)->multitoken(),
      "micro-batch counts M (default 1 2 4 8 16)")(
      "work", po::value(&o.work)->default_value(o.work),
      "sleep: timed stages (the schedule alone; fair with more stages than cores) | compute: "
      "Linear layers")("forward-ms", po::value(&o.forward_ms)->default_value(o.forward_ms),
                       "sleep: a forward's milliseconds (backward: twice)")(
      "width", po::value(&o.width)->default_value(o.width), "activation and Linear width")(
      "layers", po::value(&o.layers)->default_value(o.layers), "compute: Linear layers per stage")(
      "micro-batch-size", po::value(&o.micro_batch_size)->default_value(o.micro_batch_size),
      "samples per micro-batch")("steps", po::value(&o.steps)->default_value(o.steps),
                                 "measured steps per case (after one warm-up step)");
  const auto parsed = parse_or_help(
      args, desc, "usage: cohort launch -n STAGES -- cohort bench pipeline [options]\n");
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  comm::MpiSession session(argc, argv);
  const auto world = comm::make_communicator(session, comm::Backend::kMpi);
  const auto rows = pipeline::bench_pipeline(*world, o);
  if (session.rank() != 0) return 0;
  if (vm.count("json")) {
    std::cout << pipeline::to_json(rows, o, session.size()).dump(2, ' ', true, kJsonReplace)
              << "\n";
    return 0;
  }
  std::printf("pipeline bubble, %d stages, work %s, %d steps per case (means over stages)\n",
              session.size(), o.work.c_str(), o.steps);
  std::printf("  schedule   M   theory  measured  measured/theory  step ms  peak held\n");
  for (const auto& r : rows) {
    std::printf("  %-8s %3d   %6.3f    %6.3f          %6.3f  %7.2f  %9d\n",
                pipeline::to_string(r.schedule), r.micro_batches, r.theory, r.measured,
                r.theory > 0 ? r.measured / r.theory : 0.0, r.step_ms, r.peak_in_flight);
  }
  return 0;
}

}  // namespace cohort::cli
