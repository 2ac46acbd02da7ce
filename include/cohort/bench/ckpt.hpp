// `cohort bench ckpt`: what checkpointing costs, measured side by side in one run on the same
// files system, with the trainer's own checkpoint path (TrainCheckpoints) on an MLP with SGD
// momentum (its checkpoint: parameters + momentum buffers + position):
//   raw write     each rank writes its 1/N of the checkpoint's bytes with write(2) + fsync, in
//                 parallel: what the hardware gives for those bytes
//   sync save     checkpoint.async = false: the whole save protocol (HDF5 shards, checksums,
//                 fsyncs, manifest, rename, latest), timed from a barrier to the last rank done
//   async save    checkpoint.async = true: the time the training thread is held — the stall: in
//                 maybe_save() and in the next steps' before_update() (waiting for the writer's
//                 snapshot) — while a writer thread saves; training steps run meanwhile and
//                 their slowdown is reported too
//   load          resume from the newest checkpoint, verified, every rank reassembling every
//                 tensor, into the trained model (every value staged until the whole candidate
//                 is verified); against a raw read of the same bytes (warm page cache for both,
//                 into a warm buffer)
//   restart load  the same checkpoint loaded as a restarting `cohort train` does: into a model
//                 built anew (its initial values read over in place, made again if no candidate
//                 loads) and momentum buffers created for the load; against the same raw read
// Rounds interleave the variants; medians are reported. Floors (issue 6): save bandwidth >= 0.7x
// the raw write; async stall <= 10% of a sync save.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/comm/mpi_session.hpp"

namespace cohort::bench {

struct CkptBenchOptions {
  std::string dir = "/tmp";  // files go to a fresh subdirectory of it, removed at the end
  std::int64_t features = 1024;
  std::vector<std::int64_t> hidden = {4096, 4096};  // MLP: ~21 M parameters, ~168 MB saved
  std::int64_t batch = 32;                          // of the training steps around async saves
  int rounds = 7;
  int threads = 1;  // torch threads per rank
};

struct CkptBenchResult {
  int ranks = 1;
  std::int64_t checkpoint_bytes = 0;                         // tensor bytes in one checkpoint
  double raw_write_s = 0, sync_save_s = 0, write_ratio = 0;  // ratio: raw_write_s / sync_save_s
  double write_ratio_best = 0;  // fastest raw write / fastest sync save: robust to cold pages
  double raw_write_gbs = 0, save_gbs = 0;     // aggregate, GB/s (1e9)
  double async_stall_s = 0, stall_share = 0;  // share: stall / sync save
  double async_background_s = 0;              // from the snapshot to the writer done
  double step_ms = 0, step_during_save_ms = 0;
  double load_s = 0, raw_read_s = 0, load_ratio = 0;  // ratio: raw_read_s / load_s
  double restart_load_s = 0, restart_load_ratio = 0;  // ratio: raw_read_s / restart_load_s
  // The fastest raw read / the fastest load (restart load): the costs without the interference
  // of other work on the machine, which only ever adds time.
  double load_ratio_best = 0, restart_load_ratio_best = 0;
  std::vector<double> raw_write_rounds, sync_save_rounds, async_stall_rounds;  // every round
  std::vector<double> load_rounds, restart_load_rounds, raw_read_rounds;
};

CkptBenchResult bench_ckpt(const comm::MpiSession& session, const CkptBenchOptions& options);

}  // namespace cohort::bench
