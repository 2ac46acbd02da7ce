#include "cohort/data/bench_io.hpp"

#include <ATen/Parallel.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/relu.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "cohort/comm/allocator.hpp"
#include "cohort/data/loader.hpp"
#include "cohort/data/tools.hpp"
#include "cohort/data/writer.hpp"
#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/files.hpp"
#include "common/stats.hpp"
#include "data/batch_pieces.hpp"

namespace cohort::data {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_of(const std::function<void()>& work) {
  const auto start = Clock::now();
  work();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

using stats::median;

// read(2) of every file start to end in 8 MiB blocks: the baseline.
std::int64_t raw_read(const std::vector<std::string>& files, std::vector<char>& buffer) {
  std::int64_t total = 0;
  for (const auto& file : files) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    COHORT_CHECK(fd >= 0, IoError, file, ": cannot open: ", std::strerror(errno));
    for (;;) {
      const ssize_t got = ::read(fd, buffer.data(), buffer.size());
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      total += got;
    }
    ::close(fd);
  }
  return total;
}

// One timed pass: the bytes it read and the seconds it took.
struct Pass {
  std::int64_t bytes = 0;
  double seconds = 0;
};

Pass timed(const std::function<std::int64_t()>& work) {
  Pass pass;
  pass.seconds = seconds_of([&] { pass.bytes = work(); });
  return pass;
}

// One pass over the dataset in order through a BatchReader (raw: no conversion). Opening the
// reader is not timed: a training run opens it once, not once per epoch.
Pass reader_pass(const std::string& path, std::int64_t batch) {
  ReaderOptions options;
  options.raw = true;
  options.pin_memory = false;
  BatchReader reader(path, options);
  const std::int64_t n = reader.info().num_samples;
  std::vector<std::int64_t> indices;
  return timed([&] {
    for (std::int64_t first = 0; first < n; first += batch) {
      indices.clear();
      for (std::int64_t i = first; i < std::min(n, first + batch); ++i) indices.push_back(i);
      reader.read(indices);
    }
    return reader.stats().bytes;
  });
}

LoaderOptions loader_options(const std::string& path, std::int64_t batch, bool shuffle,
                             int prefetch) {
  LoaderOptions o;
  o.path = path;
  o.batch_size = batch;
  o.shuffle = shuffle;
  o.drop_last_batch = false;
  o.prefetch = prefetch;
  o.reader.pin_memory = false;
  return o;
}

// One epoch through a DataLoader: as stored, or converted to normalized float32. Timed from the
// first next() (which starts the producer) to the epoch's end; opening is not.
Pass loader_pass(const std::string& path, std::int64_t batch, bool shuffle, int prefetch, bool raw,
                 bool caller_reads = true) {
  auto options = loader_options(path, batch, shuffle, prefetch);
  options.reader.raw = raw;
  options.caller_reads = caller_reads;
  DataLoader loader(options);
  return timed([&] {
    while (loader.next()) {
    }
    return loader.read_stats().bytes;
  });
}

// The "model": two matrix products on the batch, repeated to the requested cost.
struct Model {
  at::Tensor w1, w2;
  int repeats = 1;
  double step_seconds = 0;
  at::Tensor fixed;  // field datasets: the model's input (their padded shape varies by batch)
  void step(const at::Tensor& inputs) const {
    const at::Tensor x = fixed.defined() ? fixed : inputs.reshape({inputs.size(0), -1});
    for (int r = 0; r < repeats; ++r) {
      const at::Tensor h = at::relu(at::mm(x, w1));
      (void)at::mm(h, w2).sum().item<float>();
    }
  }
};

WaitRow wait_share(const std::string& path, const IoBenchOptions& o, int prefetch,
                   const Model& model, bool caller_reads = true) {
  auto options = loader_options(path, o.batch, true, prefetch);
  options.caller_reads = caller_reads;
  DataLoader loader(options);
  double compute = 0;
  int steps = 0;
  while (steps < o.wait_steps) {
    auto batch = loader.next();
    if (!batch) continue;  // epoch end: go on with the next
    compute += seconds_of([&] { model.step(batch->inputs); });
    ++steps;
  }
  WaitRow row;
  row.prefetch = prefetch;
  row.caller_reads = caller_reads && prefetch > 0;
  row.own_reads = static_cast<double>(loader.wait().own_reads) / steps;
  row.wait_ms = 1e3 * loader.wait().total_seconds / steps;
  row.step_ms = row.wait_ms + 1e3 * compute / steps;
  row.wait_share = row.wait_ms / row.step_ms;
  return row;
}

// The synthetic field dataset (--kind fields): ragged tokens, an image and features per sample.
void make_field_synthetic(const std::string& path, std::int64_t samples) {
  std::uint64_t state = 12345;
  const auto next = [&state] {  // xorshift64*: fast, seeded, portable
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545f4914f6cdd1dull;
  };
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(samples));
  std::int64_t values = 0;
  for (auto& length : lengths) values += length = 16 + static_cast<std::int64_t>(next() % 497);
  WriterSpec spec;
  spec.num_samples = samples;
  spec.classes = 10;
  spec.source = "cohort bench io --kind fields";
  FieldSpec tokens{"tokens", false, true, {}, DType::kInt32, values, 32000, {}, {}};
  FieldSpec image{"image", false, false, {3, 32, 32}, DType::kUInt8, 0, 0, {}, {}};
  FieldSpec features{"features", false, false, {16}, DType::kFloat32, 0, 0, {0.0}, {1.0}};
  FieldSpec label{"label", true, false, {}, DType::kInt64, 0, 0, {}, {}};
  FieldWriter writer(path, spec, {tokens, image, features, label});
  std::vector<std::int32_t> ids(static_cast<std::size_t>(values));
  for (auto& id : ids) id = static_cast<std::int32_t>(next() % 32000);
  writer.append(0, lengths, ids.data());
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(samples) * 3 * 32 * 32);
  for (auto& p : pixels) p = static_cast<std::uint8_t>(next());
  writer.write_rows(1, 0, samples, pixels.data());
  std::vector<float> x(static_cast<std::size_t>(samples) * 16);
  for (auto& v : x) v = static_cast<float>(next() % 2001) / 1000.0f - 1.0f;
  writer.write_rows(2, 0, samples, x.data());
  std::vector<std::int64_t> y(static_cast<std::size_t>(samples));
  for (auto& v : y) v = static_cast<std::int64_t>(next() % 10);
  writer.write_rows(3, 0, samples, y.data());
  writer.commit();
}

// The synthetic dataset of a run without --dataset, removed when the benchmark ends (or fails).
struct TemporaryDataset {
  std::string path;
  ~TemporaryDataset() {
    std::error_code ignored;
    if (!path.empty()) std::filesystem::remove(path, ignored);
  }
};

std::vector<IoBenchRow> throughput(const std::string& path, const IoBenchOptions& o,
                                   std::int64_t samples) {
  const auto files = shard_paths(path);
  std::vector<char> buffer(8u << 20);
  const std::string depth = std::to_string(o.prefetch);
  const auto pieces = batch_pieces(path, o.batch);
  std::vector<std::vector<char>> piece_buffers(3, std::vector<char>(pieces ? pieces->largest : 0));
  std::vector<std::pair<std::string, std::function<Pass()>>> variants = {
      {"raw read(2), sequential", [&] { return timed([&] { return raw_read(files, buffer); }); }}};
  std::vector<std::vector<char>> second_buffers = piece_buffers;
  if (pieces) {
    variants.emplace_back("raw pread(2), each batch's pieces", [&] {
      return timed([&] { return pieces_read(*pieces, piece_buffers); });
    });
    // Two threads, alternate batches: what two readers (a loader's worker and its caller) can
    // draw from the page cache at most.
    variants.emplace_back("raw pread(2), each batch's pieces, 2 threads", [&] {
      return timed([&] {
        std::int64_t other = 0;
        std::thread helper([&] { other = pieces_read(*pieces, second_buffers, 1, 2); });
        const std::int64_t mine = pieces_read(*pieces, piece_buffers, 0, 2);
        helper.join();
        return mine + other;
      });
    });
  }
  variants.insert(
      variants.end(),
      {{"BatchReader, contiguous, as stored", [&] { return reader_pass(path, o.batch); }},
       {"DataLoader, contiguous, as stored, prefetch " + depth,
        [&] { return loader_pass(path, o.batch, false, o.prefetch, true); }},
       {"DataLoader, contiguous, as stored, prefetch " + depth + ", caller sleeps",
        [&] { return loader_pass(path, o.batch, false, o.prefetch, true, false); }},
       {"DataLoader, contiguous, float32, prefetch " + depth,
        [&] { return loader_pass(path, o.batch, false, o.prefetch, false); }},
       {"DataLoader, shuffled, float32, prefetch " + depth,
        [&] { return loader_pass(path, o.batch, true, o.prefetch, false); }}});
  raw_read(files, buffer);  // warm the page cache
  // Each timing repeats a pass until the raw read would take ~0.25 s: a pass over a cached file
  // takes milliseconds, too short to time against scheduler noise.
  const double raw_pass = seconds_of([&] { raw_read(files, buffer); });
  const int repeats = std::max(1, static_cast<int>(0.25 / std::max(raw_pass, 1e-4)));
  std::vector<std::vector<double>> times(variants.size());
  std::vector<std::int64_t> bytes(variants.size());
  for (int round = 0; round < o.rounds; ++round) {  // interleaved: same machine state for all
    for (std::size_t v = 0; v < variants.size(); ++v) {
      double total = 0;
      for (int r = 0; r < repeats; ++r) {
        const Pass pass = variants[v].second();
        bytes[v] = pass.bytes;
        total += pass.seconds;
      }
      times[v].push_back(total / repeats);
    }
  }
  std::vector<IoBenchRow> rows;
  for (std::size_t v = 0; v < variants.size(); ++v) {
    IoBenchRow row;
    row.name = variants[v].first;
    row.seconds = median(times[v]);
    row.mb_per_s = static_cast<double>(bytes[v]) / 1048576.0 / row.seconds;
    row.samples_per_s = static_cast<double>(samples) / row.seconds;
    rows.push_back(row);
  }
  for (auto& row : rows) {
    row.ratio_vs_raw = row.mb_per_s / rows[0].mb_per_s;
    if (pieces) row.ratio_vs_pieces = row.mb_per_s / rows[1].mb_per_s;
    if (pieces) row.ratio_vs_pieces_2t = row.mb_per_s / rows[2].mb_per_s;
  }
  return rows;
}

// A model step costing compute_factor x a synchronous batch (read + convert), from medians of
// warm repetitions.
Model calibrate_model(const std::string& path, const IoBenchOptions& o, std::int64_t features) {
  Model model{at::randn({features, 256}), at::randn({256, 256}), 1, 0, {}};
  if (describe(path).kind == DatasetKind::kFields) model.fixed = at::randn({o.batch, features});
  DataLoader probe(loader_options(path, o.batch, true, 0));
  std::vector<double> reads, steps;
  const at::Tensor sample_input = at::randn({o.batch, features});
  for (int i = 0; i < 7; ++i) {
    reads.push_back(seconds_of([&] { probe.next(); }));
    steps.push_back(seconds_of([&] { model.step(sample_input); }));
  }
  model.repeats =
      std::max(1, static_cast<int>(o.compute_factor * median(reads) / median(steps) + 0.5));
  model.step_seconds = median(steps) * model.repeats;
  return model;
}

}  // namespace

IoBenchResult bench_io(const IoBenchOptions& o) {
  // One intra-op thread: the second core is the prefetch thread's, as on a rank that owns a core
  // or two of a node.
  at::set_num_threads(1);
  comm::tune_allocator();  // as a training process has it (MpiSession): batch buffers stay warm
  TemporaryDataset temporary;
  IoBenchResult result;
  result.dataset = o.dataset;
  if (o.dataset.empty()) {
    io::make_directories(o.workdir);  // as the other benches make theirs; an IoError naming it
    temporary.path = result.dataset =
        o.workdir + "/cohort-bench-io-" + std::to_string(::getpid()) + ".h5";
    COHORT_CHECK(o.kind == "images" || o.kind == "fields", UsageError, "bench io: --kind '", o.kind,
                 "' is not images or fields");
    if (o.kind == "fields") {
      make_field_synthetic(temporary.path, o.synthetic_samples);
    } else {
      SyntheticOptions s;
      s.kind = "images";
      s.samples = o.synthetic_samples;
      s.channels = o.channels;
      s.image_size = o.image_size;
      make_synthetic(temporary.path, s);
    }
  }
  for (const auto& f : shard_paths(result.dataset)) result.file_bytes += io::file_bytes(f);
  const DatasetInfo info = describe(result.dataset);
  result.samples = info.num_samples;
  result.rows = throughput(result.dataset, o, result.samples);
  const Model model = calibrate_model(
      result.dataset, o, info.kind == DatasetKind::kFields ? 1024 : info.sample_numel());
  result.compute_ms = 1e3 * model.step_seconds;
  result.waits.push_back(wait_share(result.dataset, o, 0, model));
  result.waits.push_back(wait_share(result.dataset, o, o.prefetch, model));
  result.waits.push_back(wait_share(result.dataset, o, o.prefetch, model, false));
  result.cache_note =
      "warm page cache: the file was read once before timing and fits in memory. Cold-cache "
      "figures need the page cache dropped (echo 3 > /proc/sys/vm/drop_caches), which needs root "
      "on the host; this machine is a VM whose host caches the virtual disk as well, so a read "
      "here never reaches a cold device.";
  return result;
}

nlohmann::json to_json(const IoBenchResult& r, const IoBenchOptions& o) {
  using nlohmann::json;
  json out = {{"dataset", r.dataset},  {"samples", r.samples},       {"file_bytes", r.file_bytes},
              {"batch", o.batch},      {"compute_ms", r.compute_ms}, {"cache", r.cache_note},
              {"rows", json::array()}, {"wait", json::array()}};
  for (const auto& row : r.rows) {
    out["rows"].push_back({{"name", row.name},
                           {"seconds", row.seconds},
                           {"mib_per_s", row.mb_per_s},
                           {"samples_per_s", row.samples_per_s},
                           {"ratio_vs_raw", row.ratio_vs_raw},
                           {"ratio_vs_pieces", row.ratio_vs_pieces},
                           {"ratio_vs_pieces_2_threads", row.ratio_vs_pieces_2t}});
  }
  for (const auto& w : r.waits) {
    out["wait"].push_back({{"prefetch", w.prefetch},
                           {"caller_reads", w.caller_reads},
                           {"own_reads", w.own_reads},
                           {"step_ms", w.step_ms},
                           {"wait_ms", w.wait_ms},
                           {"wait_share", w.wait_share}});
  }
  return out;
}

}  // namespace cohort::data
