// `cohort bench zero`: what ZeRO stages 0 to 3 hold per rank and cost per step, side by side.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cohort/bench/json.hpp"
#include "cohort/bench/zero.hpp"
#include "cohort/comm/mpi_session.hpp"
#include "cohort/error.hpp"
#include "command.hpp"
#include "options.hpp"

namespace cohort::cli {

namespace po = boost::program_options;

namespace {

void print_text(const bench::ZeroBenchResult& r, const bench::ZeroBenchOptions& o) {
  const double mib = 1048576.0;
  std::printf("ZeRO, MLP %lld parameters, AdamW, %d ranks, batch %lld/rank, overlap %s\n",
              static_cast<long long>(r.parameters), r.ranks, static_cast<long long>(o.batch),
              o.overlap ? "on" : "off");
  std::printf(
      "  stage  parameters  gradients  optimizer    held  theory  held/theory  buckets"
      "   gathered  step ms  vs DDP\n");
  for (const auto& f : r.stages) {
    std::printf(
        "  %5d  %7.1f MiB %7.1f MiB %7.1f MiB %7.1f %7.1f  %11.3f %6.1f MiB %6.1f MiB %8.2f "
        "%7.3f\n",
        f.stage, f.parameter_bytes / mib, f.gradient_bytes / mib, f.optimizer_bytes / mib,
        (f.parameter_bytes + f.gradient_bytes + f.optimizer_bytes) / mib, f.theory_bytes / mib,
        f.held_ratio, f.bucket_bytes / mib, f.gathered_bytes / mib, f.step_ms, f.step_ratio);
  }
  std::printf(
      "  theory for Psi parameters over N ranks: 16 Psi (DDP), 4 Psi + 4 Psi + 8 Psi/N "
      "(stage 1), 4 Psi + 12 Psi/N (stage 2), 16 Psi/N (stage 3); 'buckets': stages 2 and 3's "
      "transient gradient buffers at most, 'gathered': stage 3's whole layers at most "
      "(docs/parallelism.md)\n");
}

}  // namespace

int bench_zero(const std::vector<std::string>& args, int* argc, char*** argv) {
  bench::ZeroBenchOptions o;
  po::options_description desc("cohort bench zero options");
  desc.add_options()("help,h", "show this help")("json", "print JSON")(
      "layers", po::value(&o.layers)->multitoken(), "MLP widths (default 1024 2048 2048 1024 10)")(
      "batch", po::value(&o.batch)->default_value(o.batch), "per-rank batch")(
      "steps", po::value(&o.steps)->default_value(o.steps), "measured steps per stage")(
      "threads", po::value(&o.threads)->default_value(o.threads), "torch threads per rank")(
      "bucket-bytes", po::value(&o.bucket_bytes)->default_value(o.bucket_bytes), "bucket size")(
      "overlap", "reduce buckets during backward (parallel.overlap)");
  const auto parsed =
      parse_or_help(args, desc, "usage: cohort launch -n N -- cohort bench zero [options]\n");
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  COHORT_CHECK(o.layers.size() >= 2 && o.batch >= 1 && o.steps >= 1 && o.threads >= 1, UsageError,
               "cohort bench zero: --layers needs two widths or more; --batch, --steps and "
               "--threads at least 1");
  o.overlap = vm.count("overlap") != 0;
  comm::MpiSession session(argc, argv);
  const auto r = bench::bench_zero(session, o);
  if (session.rank() != 0) return 0;
  if (!vm.count("json")) {
    print_text(r, o);
    return 0;
  }
  std::cout << bench::to_json(r, o).dump(2, ' ', true, kJsonReplace) << "\n";
  return 0;
}

}  // namespace cohort::cli
