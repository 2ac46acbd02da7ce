// `cohort bench allreduce|ddp|io|ckpt|monitor [options] [--json]` (pipeline and zero: files of
// their own): benchmarks reported as ratios against a
// baseline measured in the same run (raw MPI_Allreduce; compute plus one raw all-reduce; raw
// reads; raw writes and reads of the checkpoint's bytes).
#include <torch/cuda.h>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cohort/bench/ckpt.hpp"
#include "cohort/bench/ddp.hpp"
#include "cohort/bench/floor.hpp"
#include "cohort/bench/json.hpp"
#include "cohort/bench/monitor.hpp"
#include "cohort/comm/allocator.hpp"
#include "cohort/comm/bench.hpp"
#include "cohort/comm/device.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/data/bench_io.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/env/gpu_binding.hpp"
#include "cohort/error.hpp"
#include "command.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace cohort::cli {
namespace {

// The verdict on a benchmark's floors (bench/floor.hpp), after its figures: met or not, never an
// error.
void print_floors(const std::vector<bench::Floor>& floors) {
  int met = 0;
  for (const auto& f : floors) met += f.met() ? 1 : 0;
  std::printf("verdict: %d of %zu floor(s) met\n", met, floors.size());
  for (const auto& f : floors) {
    std::printf("  %-44s %.4g %s %.4g: %s\n", f.name.c_str(), f.value,
                f.at_most ? "<=" : ">=", f.limit, f.met() ? "met" : "NOT MET");
  }
}

// One GPU per rank, the one the launcher bound (docs/launcher.md, "GPU binding"), made current.
c10::Device own_gpu(const comm::MpiSession& session) {
  const int cuda_devices = static_cast<int>(torch::cuda::device_count());
  COHORT_CHECK(cuda_devices > 0, ConfigError,
               "--backend nccl: this rank sees no CUDA device (a CPU-only LibTorch, or no GPU "
               "or driver here)");
  const auto binding = env::bind_gpu(env::Environment::from_process(), session.node_rank(),
                                     session.node_size(), cuda_devices);
  const int ordinal = env::require_own_gpu(binding, "cohort bench allreduce --backend nccl");
  comm::set_rank_device(ordinal);
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(ordinal));
}

int bench_allreduce(const std::vector<std::string>& args, int* argc, char*** argv) {
  comm::AllreduceBenchOptions options;
  std::string backend = "mpi";
  po::options_description desc("cohort bench allreduce options");
  desc.add_options()("help,h", "show this help")("json", "print JSON")(
      "backend", po::value<std::string>(&backend)->default_value(backend),
      "mpi (host buffers) or nccl (buffers on the rank's own GPU, the launcher's binding)")(
      "min-bytes", po::value<std::size_t>(&options.min_bytes)->default_value(options.min_bytes),
      "smallest message")(
      "max-bytes", po::value<std::size_t>(&options.max_bytes)->default_value(options.max_bytes),
      "largest message (sizes grow 4x)")(
      "seconds", po::value<double>(&options.seconds_per_size)->default_value(1.0),
      "time budget per size");
  const auto parsed =
      parse_or_help(args, desc, "usage: cohort launch -n N -- cohort bench allreduce [options]\n");
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  COHORT_CHECK(backend == "mpi" || backend == "nccl", UsageError, "--backend: '", backend,
               "' is not mpi or nccl");
  comm::MpiSession session(argc, argv);
  const bool nccl = backend == "nccl";
  // A build without NCCL is refused by make_communicator below, naming why.
  if (nccl && comm::backend_compiled(comm::Backend::kNccl)) options.device = own_gpu(session);
  auto communicator =
      comm::make_communicator(session, nccl ? comm::Backend::kNccl : comm::Backend::kMpi);
  const auto rows = comm::bench_allreduce(*communicator, session, options);
  if (session.rank() != 0) return 0;
  const auto tuning = comm::tune_allocator();
  if (vm.count("json")) {
    std::cout << comm::to_json(rows, session.size(), backend, tuning.reason)
                     .dump(2, ' ', true, kJsonReplace)
              << "\n";
    return 0;
  }
  std::printf("all-reduce, float32 sum, %d ranks, %s%s (malloc tuning: %s)\n", session.size(),
              backend.c_str(), nccl ? " on cuda:0 against host MPI" : "", tuning.reason);
  std::printf("%12s %6s %11s %11s %11s %10s %10s %8s\n", "bytes", "iters", "cohort ms", "async ms",
              "raw mpi ms", "algbw GB/s", "busbw GB/s", "raw/coh");
  for (const auto& r : rows) {
    std::printf("%12zu %6d %11.4f %11.4f %11.4f %10.3f %10.3f %8.3f\n", r.bytes, r.iterations,
                r.cohort_ms, r.cohort_async_ms, r.raw_ms, r.algbw_gbs, r.busbw_gbs, r.ratio);
  }
  return 0;
}

int bench_ddp(const std::vector<std::string>& args, int* argc, char*** argv) {
  bench::DdpBenchOptions options;
  po::options_description desc("cohort bench ddp options");
  desc.add_options()("help,h", "show this help")("json", "print JSON")(
      "batch", po::value<std::int64_t>(&options.batch)->default_value(options.batch),
      "per-rank batch")("steps", po::value<int>(&options.steps)->default_value(options.steps),
                        "measured steps")(
      "threads", po::value<int>(&options.threads)->default_value(options.threads),
      "torch threads per rank")(
      "bucket-bytes",
      po::value<std::size_t>(&options.bucket_bytes)->default_value(options.bucket_bytes),
      "DDP bucket size")("overlap",
                         "report DDP with overlapped all-reduce (default: reduce in finish_step)");
  const auto parsed =
      parse_or_help(args, desc, "usage: cohort launch -n N -- cohort bench ddp [options]\n");
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  options.overlap = vm.count("overlap") != 0;
  comm::MpiSession session(argc, argv);
  const auto r = bench::bench_ddp(session, options);
  if (session.rank() != 0) return 0;
  if (vm.count("json")) {
    std::cout << bench::to_json(r, options).dump(2, ' ', true, kJsonReplace) << "\n";
    return 0;
  }
  std::printf(
      "DDP, MLP %lld parameters (%.1f MiB of gradients, %d buckets), %d ranks, batch %lld/rank\n",
      static_cast<long long>(r.parameters), r.gradient_bytes / 1048576.0, r.buckets, r.ranks,
      static_cast<long long>(options.batch));
  std::printf("  compute-only step   %9.3f ms\n", r.compute_ms);
  std::printf("  DDP step            %9.3f ms   (overlap %s)\n", r.ddp_ms,
              options.overlap ? "on" : "off");
  std::printf(
      "  DDP step, overlap %-3s %7.3f ms (its own pass: DDP / (compute + all-reduce) = %.3f)\n",
      options.overlap ? "off" : "on", r.ddp_other_ms, r.other_floor_ratio);
  std::printf("  DDP alone           %9.0f samples/s (all ranks)\n", r.samples_per_s);
  std::printf("  raw all-reduce      %9.3f ms   of all gradient bytes\n", r.allreduce_ms);
  std::printf("  DDP / (compute + all-reduce) = %.3f   (floor: <= 1.05)\n", r.floor_ratio);
  std::printf("  exposed communication: %.1f%% of the step (%.3f ms waited in finish_step)\n",
              100 * r.exposed_share, r.finish_wait_ms);
  std::printf(
      "  all-reduce cost not visible in the step: %.1f%% (overlap, or the gradient hand-over: "
      "docs/ddp.md)\n",
      100 * r.hidden_fraction);
  print_floors(bench::floors(r));
  return 0;
}

int bench_io(const std::vector<std::string>& args) {
  data::IoBenchOptions o;
  po::options_description desc("cohort bench io options");
  desc.add_options()("help,h", "show this help")("json", "print JSON")(
      "dataset", path_value(&o.dataset, PathKind::kFileOrDirectory),
      "dataset to read (default: a synthetic set of --kind)")(
      "kind", po::value(&o.kind)->default_value(o.kind),
      "synthetic set: images | fields (ragged tokens, an image and features per sample)")(
      "workdir", path_value(&o.workdir, PathKind::kOutputDirectory)->default_value(o.workdir),
      "where the synthetic set goes")(
      "samples", po::value(&o.synthetic_samples)->default_value(o.synthetic_samples),
      "synthetic set size")("channels", po::value(&o.channels)->default_value(o.channels),
                            "synthetic image channels")(
      "image-size", po::value(&o.image_size)->default_value(o.image_size), "synthetic image side")(
      "batch", po::value(&o.batch)->default_value(o.batch), "batch size")(
      "rounds", po::value(&o.rounds)->default_value(o.rounds), "interleaved rounds (median)")(
      "prefetch", po::value(&o.prefetch)->default_value(o.prefetch), "prefetch depth")(
      "steps", po::value(&o.wait_steps)->default_value(o.wait_steps), "steps of the wait test")(
      "compute-factor", po::value(&o.compute_factor)->default_value(o.compute_factor),
      "model step cost in synchronous batch reads");
  const auto parsed = parse_or_help(args, desc, "usage: cohort bench io [options]\n");
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  const auto r = data::bench_io(o);
  if (vm.count("json")) {
    std::cout << data::to_json(r, o).dump(2, ' ', true, kJsonReplace) << "\n";
    return 0;
  }
  std::printf("data path vs raw read, %lld samples, %.1f MiB, batch %lld, median of %d rounds\n",
              static_cast<long long>(r.samples), r.file_bytes / 1048576.0,
              static_cast<long long>(o.batch), o.rounds);
  std::printf("  %-62s %8s %9s %11s %7s %9s %7s\n", "variant", "seconds", "MiB/s", "samples/s",
              "vs raw", "vs pieces", "vs 2 thr");
  for (const auto& row : r.rows) {
    std::printf("  %-62s %8.3f %9.1f %11.0f %7.3f %9.3f %7.3f\n", row.name.c_str(), row.seconds,
                row.mb_per_s, row.samples_per_s, row.ratio_vs_raw, row.ratio_vs_pieces,
                row.ratio_vs_pieces_2t);
  }
  std::printf("data wait in a training step (model step %.2f ms, shuffled batches):\n",
              r.compute_ms);
  for (const auto& w : r.waits) {
    std::printf("  prefetch %d%s: step %.2f ms, waiting %.2f ms = %.1f%% of the step", w.prefetch,
                w.prefetch > 0 && !w.caller_reads ? ", caller sleeps" : "", w.step_ms, w.wait_ms,
                100 * w.wait_share);
    if (w.caller_reads) std::printf(" (%.0f%% of the batches read by it)", 100 * w.own_reads);
    std::printf("\n");
  }
  std::printf("note: %s\n", r.cache_note.c_str());
  return 0;
}

}  // namespace

void print_ckpt(const bench::CkptBenchResult& r, const bench::CkptBenchOptions& o) {
  std::printf("checkpoint of an MLP (%lld MB: parameters + momentum), %d ranks, under %s\n",
              static_cast<long long>(r.checkpoint_bytes / 1000000), r.ranks, o.dir.c_str());
  std::printf("  raw write + fsync      %8.3f s  %6.2f GB/s\n", r.raw_write_s, r.raw_write_gbs);
  std::printf(
      "  sync save              %8.3f s  %6.2f GB/s  = %.2fx the raw write (floor >= 0.7)\n",
      r.sync_save_s, r.save_gbs, r.write_ratio);
  std::printf("  fastest rounds         raw write / sync save = %.2fx\n", r.write_ratio_best);
  std::printf("  async save: stall      %8.3f s  = %.1f%% of a sync save (floor <= 10%%)\n",
              r.async_stall_s, 100 * r.stall_share);
  std::printf(
      "  async save: written in %8.3f s  while training (step %.1f ms, %.1f ms meanwhile)\n",
      r.async_background_s, r.step_ms, r.step_during_save_ms);
  std::printf("  raw read               %8.3f s  (every shard, warm cache, into a warm buffer)\n",
              r.raw_read_s);
  std::printf("  load (verified)        %8.3f s  = %.2fx the raw read's speed (its time %.2fx)\n",
              r.load_s, r.load_ratio, 1 / r.load_ratio);
  std::printf(
      "  restart load           %8.3f s  = %.2fx the raw read's speed (its time %.2fx, floor "
      "<= 1.5x)\n",
      r.restart_load_s, r.restart_load_ratio, 1 / r.restart_load_ratio);
  std::printf("  fastest rounds         load / raw read = %.2fx, restart load / raw read = %.2fx\n",
              1 / r.load_ratio_best, 1 / r.restart_load_ratio_best);
}

int bench_ckpt(const std::vector<std::string>& args, int* argc, char*** argv) {
  bench::CkptBenchOptions o;
  po::options_description desc("cohort bench ckpt options");
  desc.add_options()("help,h", "show this help")("json", "print JSON")(
      "dir", path_value(&o.dir, PathKind::kOutputDirectory)->default_value(o.dir),
      "file system to measure (a fresh subdirectory)")("hidden", po::value(&o.hidden)->multitoken(),
                                                       "MLP hidden widths (default 4096 4096)")(
      "features", po::value(&o.features)->default_value(o.features), "MLP input width")(
      "rounds", po::value(&o.rounds)->default_value(o.rounds), "measured rounds (medians)")(
      "threads", po::value(&o.threads)->default_value(o.threads), "torch threads per rank");
  const auto parsed =
      parse_or_help(args, desc, "usage: cohort launch -n N -- cohort bench ckpt [options]\n");
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  COHORT_CHECK(o.rounds > 0 && !o.hidden.empty(), UsageError,
               "cohort bench ckpt: --rounds must be positive and --hidden non-empty");
  comm::MpiSession session(argc, argv);
  const auto r = bench::bench_ckpt(session, o);
  if (session.rank() != 0) return 0;
  if (!vm.count("json")) {
    print_ckpt(r, o);
    print_floors(bench::floors(r));
    return 0;
  }
  std::cout << bench::to_json(r, o).dump(2, ' ', true, kJsonReplace) << "\n";
  return 0;
}

int bench_monitor(const std::vector<std::string>& args, int* argc, char*** argv) {
  bench::MonitorBenchOptions o;
  po::options_description desc("cohort bench monitor options");
  desc.add_options()("help,h", "show this help")("json", "print JSON")(
      "dir", path_value(&o.dir, PathKind::kOutputDirectory)->default_value(o.dir),
      "where the data and runs go (a fresh subdirectory)")(
      "hidden", po::value(&o.hidden)->multitoken(), "MLP hidden widths (default 1024 1024)")(
      "steps", po::value(&o.steps)->default_value(o.steps), "steps per run")(
      "batch", po::value(&o.batch)->default_value(o.batch), "samples per rank per step")(
      "summary-every", po::value(&o.summary_every)->default_value(o.summary_every),
      "monitor.summary_every of the monitored runs")(
      "rounds", po::value(&o.rounds)->default_value(o.rounds), "rounds (medians)")(
      "threads", po::value(&o.threads)->default_value(o.threads), "torch threads per rank");
  const auto parsed =
      parse_or_help(args, desc, "usage: cohort launch -n N -- cohort bench monitor [options]\n");
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  COHORT_CHECK(o.rounds > 0 && o.steps > 10 && !o.hidden.empty(), UsageError,
               "cohort bench monitor: --rounds must be positive, --steps above 10, --hidden set");
  comm::MpiSession session(argc, argv);
  const auto r = bench::bench_monitor(session, o);
  if (session.rank() != 0) return 0;
  if (vm.count("json")) {
    std::cout << bench::to_json(r, o).dump(2, ' ', true, kJsonReplace) << "\n";
    return 0;
  }
  std::printf(
      "monitoring overhead, %d ranks, MLP %s, %lld steps x %d rounds (medians)\n", r.ranks,
      [&] {
        std::string h;
        for (auto x : o.hidden) h += (h.empty() ? "" : "x") + std::to_string(x);
        return h;
      }()
          .c_str(),
      static_cast<long long>(o.steps), o.rounds);
  std::printf("  metrics off   %8.3f ms per step (median)\n", r.step_off_ms);
  std::printf("  metrics on    %8.3f ms per step (median)\n", r.step_on_ms);
  std::printf("  overhead      %+7.2f%%  median of the rounds' on/off ratios (floor <= +2%%)\n",
              100 * r.overhead);
  std::printf("  self-timed    %8.3f ms per step in the monitor = %.2f%% of a step (rank 0)\n",
              r.self_ms, 100 * r.self_share);
  print_floors(bench::floors(r));
  return 0;
}

int run_bench(const std::vector<std::string>& args, int* argc, char*** argv) {
  const std::string what = args.empty() ? "" : args.front();
  if (what == "--help" || what == "-h" || what == "help") {
    std::cout
        << "usage: cohort bench <allreduce|ddp|io|ckpt|monitor|pipeline|zero|topology|control> "
           "[options] "
           "[--json]\n       cohort "
           "bench <benchmark> --help\n";
    return 0;
  }
  const std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (what == "allreduce") return bench_allreduce(rest, argc, argv);
  if (what == "ddp") return bench_ddp(rest, argc, argv);
  if (what == "io") return bench_io(rest);
  if (what == "ckpt") return bench_ckpt(rest, argc, argv);
  if (what == "monitor") return bench_monitor(rest, argc, argv);
  if (what == "pipeline") return bench_pipeline(rest, argc, argv);
  if (what == "zero") return bench_zero(rest, argc, argv);
  if (what == "topology") return bench_topology(rest);
  if (what == "control") return bench_control(rest, argc, argv);
  COHORT_THROW(UsageError, "cohort bench: unknown benchmark '", what,
               "' (allreduce, ddp, io, ckpt, monitor, pipeline, zero, topology, control)");
}

}  // namespace cohort::cli
