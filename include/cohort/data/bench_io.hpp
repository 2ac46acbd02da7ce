// `cohort bench io`: the data path against a raw sequential read of the same files and a raw
// pread of exactly the pieces each batch reads, in the same run, with a warm page cache; and the
// data-wait share of a training step with prefetch on and off. Variants are interleaved round by
// round and reported as medians, so that every ratio compares measurements taken under the same
// machine state.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace cohort::data {

struct IoBenchOptions {
  std::string dataset;  // empty: a synthetic set of `kind` is made in workdir and removed
  // images: [3, 64, 64] uint8 samples; fields: a field dataset of ragged int32 tokens (16..512
  // per sample, mean ~264: ~1 KiB), a [3, 32, 32] uint8 image and 16 float32 features per sample.
  std::string kind = "images";
  std::string workdir = "/tmp";
  std::int64_t synthetic_samples = 20000;  // 3x64x64 uint8 images (12 KiB): ~235 MiB
  std::int64_t channels = 3;
  std::int64_t image_size = 64;
  std::int64_t batch = 256;
  int rounds = 5;
  int prefetch = 2;
  int wait_steps = 60;          // steps of the wait-share measurement
  double compute_factor = 2.0;  // model step cost, in multiples of a synchronous batch read
};

struct IoBenchRow {
  std::string name;
  double seconds = 0;   // median over rounds, one full pass
  double mb_per_s = 0;  // payload MiB/s
  double samples_per_s = 0;
  double ratio_vs_raw = 0;        // MB/s over the raw read's MB/s
  double ratio_vs_pieces = 0;     // over the raw pread of each batch's pieces' (0: no such row)
  double ratio_vs_pieces_2t = 0;  // over the same pread shared by two threads (0: no such row)
};

struct WaitRow {
  int prefetch = 0;
  bool caller_reads = true;  // LoaderOptions::caller_reads
  double own_reads = 0;      // share of the batches the caller read itself
  double step_ms = 0;        // wait + compute per step
  double wait_ms = 0;        // blocked in next() per step
  double wait_share = 0;
};

struct IoBenchResult {
  std::string dataset;
  std::int64_t samples = 0;
  std::int64_t file_bytes = 0;
  // rows[0] is the raw sequential read; then, where every dataset's rows have file extents (not
  // a token stream, no compression), a raw pread of each contiguous batch's pieces.
  std::vector<IoBenchRow> rows;
  double compute_ms = 0;
  std::vector<WaitRow> waits;
  std::string cache_note;
};

IoBenchResult bench_io(const IoBenchOptions& options);

// `cohort bench io --json`: the dataset, batch, "rows" (read variants), "wait" (per prefetch).
nlohmann::json to_json(const IoBenchResult& result, const IoBenchOptions& options);

}  // namespace cohort::data
