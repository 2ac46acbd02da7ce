// Saving and loading sharded checkpoints (docs/formats/checkpoint.md).
//
// save_checkpoint() is collective over the checkpoint's own communicator (never the training
// one). Under data parallelism every rank holds the same replicated tensors; ShardPlan gives each
// a disjoint, byte-balanced part, so the ranks write one model copy between them, in parallel.
// Under pipeline or tensor parallelism ranks hold different tensors: plan_checkpoint() gathers
// every rank's list once per save and balances each tensor among the ranks that hold it (a
// tensor held by several groups, such as a tied embedding, must be equal on all of them).
// Protocol:
//  1. every rank writes its shard (its slices and its own rank state) into
//     <dir>/step-<N>.tmp-<tag>/ and fsyncs it;
//  2. slice checksums and shard sizes are summed to every rank by one all-reduce (each rank fills
//     its own entries; the all-reduce is also the barrier);
//  3. rank 0 writes manifest.json, fsyncs it, renames the directory to step-<N>, fsyncs <dir>,
//     then replaces <dir>/latest (temporary file + rename + fsync of <dir>); a final barrier.
// A crash before the rename leaves only a *.tmp-* directory, which clean_partial() removes at the
// next start; the previous checkpoint and `latest` are untouched until the new one is whole.
//
// load_latest() is collective too: it tries `latest`, then every other step-* directory newest
// first, and takes the first whose manifest is valid, whose tensors match the wanted names,
// dtypes and shapes, and (with verify) whose slices all match their checksums. Every rank must
// succeed for a candidate to be taken. Each rejected candidate gets one warning line naming the
// file and the reason. Resharding is free: each wanted tensor is reassembled from the stored
// slices, whatever world size wrote them.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cohort/ckpt/manifest.hpp"
#include "cohort/ckpt/shard_plan.hpp"

namespace cohort::comm {
class Communicator;
}

namespace cohort::ckpt {

// A part of a tensor: the elements [offset, offset + numel) of a tensor of `shape`, in its flat
// row-major order. ZeRO's sharded optimizer state: each rank holds one part, none the whole.
struct TensorPart {
  std::vector<std::int64_t> shape;  // the whole tensor's
  std::int64_t offset = 0;
};

struct NamedTensor {
  NamedTensor() = default;
  NamedTensor(std::string n, at::Tensor t, std::optional<TensorPart> p = std::nullopt)
      : name(std::move(n)), tensor(std::move(t)), part(std::move(p)) {}

  std::string name;
  at::Tensor tensor;               // any dense layout; a part's is its numel elements, flat
  std::optional<TensorPart> part;  // none: the whole tensor
  // Loading: the tensor holds nothing worth keeping (state made only to be filled, e.g. an
  // optimizer's), or values its owner can make again (a model nobody has trained yet in this
  // process). load_latest() reads a host tensor of this kind straight into it, without a
  // staging copy; a candidate found corrupt half-way may leave it half-written, and the caller
  // discards or remakes it when a candidate was tried and none loaded. Every other tensor is only
  // written once the whole candidate is read and verified on every rank.
  bool fresh = false;
};

struct SaveRequest {
  std::int64_t step = 0;
  std::int64_t epoch = 0;
  std::int64_t samples_seen = 0;
  std::string config_hash;
  int nodes = 1;
  // A name means the same dtype, shape and values on every rank that holds it; parts of one
  // tensor may be held by different ranks, and together they must cover it.
  std::vector<NamedTensor> tensors;
  std::string rank_state;  // this rank's own bytes (sampler, RNG)
  // Names this save attempt, the same on every rank (the trainer: "<job id>-<restart count>"
  // inside Slurm); empty: rank 0's process id, broadcast.
  std::string attempt;
};

// Collective: who writes which slices, from every rank's tensors (names, dtypes, shapes, parts).
// The byte-balanced plan when every rank holds the same whole tensors; otherwise each whole-held
// tensor is balanced among its holders and a tensor held in parts is written by the holders of
// its parts (ShardPlan::among_holdings). Throws IoError when one name has different dtypes or
// shapes on two ranks, or when the parts of a tensor leave elements that no rank holds.
ShardPlan plan_checkpoint(const SaveRequest& request, comm::Communicator& comm);

// The plan once per layout: plan_checkpoint() gathers every rank's tensor list (R x T entries
// over the communicator) at every save; a run saves the same tensors again and again. plan()
// compares this rank's list with the one of the plan it holds, agrees with the other ranks by
// one all-reduce of one flag whether any list changed (a rank that now holds optimizer state, a
// resharded run), and gathers again only then. Collective; one save at a time (the caller's).
class PlanCache {
 public:
  const ShardPlan& plan(const SaveRequest& request, comm::Communicator& comm);
  std::int64_t plans_made() const { return plans_made_; }
  // Bytes the last gather moved to each rank (0 when the last plan() reused the plan).
  std::int64_t last_gather_bytes() const { return last_gather_bytes_; }

 private:
  std::string layout_;
  std::optional<ShardPlan> plan_;
  std::int64_t plans_made_ = 0;
  std::int64_t last_gather_bytes_ = 0;
};

// What save_checkpoint() will read of `request` on rank `rank` under `plan`: a copy of the
// request whose tensors are fresh, contiguous host tensors of the same shapes holding this rank's
// slices; their other elements are left uninitialised and never read. The asynchronous save's
// snapshot: 1/world of the bytes, so the copy costs 1/world too.
SaveRequest snapshot_own_part(const SaveRequest& request, const ShardPlan& plan, int rank);

// Collective. Returns the committed directory (<dir>/step-<N>). The temporary directory is
// step-<N>.tmp-<tag>, the tag being request.attempt, or rank 0's process id when it is empty
// (broadcast, so every rank writes into the same one).
std::string save_checkpoint(const std::string& dir, const SaveRequest& request,
                            comm::Communicator& comm);
// The same with a plan made by plan_checkpoint() for this request's tensors.
std::string save_checkpoint(const std::string& dir, const SaveRequest& request,
                            const ShardPlan& plan, comm::Communicator& comm);

struct LoadedCheckpoint {
  std::string path;  // the step directory taken
  Manifest manifest;
  std::string rank_state;          // this rank's, when the world size is unchanged; else empty
  std::int64_t checked_bytes = 0;  // the bytes of slices this rank matched to their checksums
};

// What a caller checks of a candidate before it is taken: the candidate, and the values read for
// `into`, in its order. Throws IoError to reject it (the loader then tries the next one).
using CandidateCheck =
    std::function<void(const LoadedCheckpoint&, const std::vector<at::Tensor>& values)>;

// Fills `buffer` (host memory, `want`'s size and dtype) for a wanted tensor that the candidate
// does not store under its own name (a tensor-parallel part of another parallel.tensor) and
// returns true; false leaves it to the default (the name, as stored). IoError rejects the
// candidate.
class CheckpointReader;
using TensorSource = std::function<bool(CheckpointReader& reader, const NamedTensor& want,
                                        at::Tensor& buffer, bool verify)>;

// The step directories load_latest() tries, in its order: the one `latest` names, then the others
// newest first (fixed-width step numbers). Empty when `dir` has none or is not there.
std::vector<std::string> checkpoint_candidates(const std::string& dir);

struct LoadOptions {
  bool verify = true;  // every slice read must match its checksum
  // This rank's place among the ranks of its node (comm::MpiSession::node_rank/node_size; every
  // one of them must be a rank of the load's communicator). They read the checkpoint through the
  // node's one page cache: when every rank wants the same tensors (plain data parallelism;
  // load_latest checks it), each slice of a tensor read whole is matched to its checksum by one
  // rank of each node, not by all of them (the slices in reading order cut into node_size runs
  // of about equal bytes, run r checked by node rank r). Every slice is still checked on every
  // node. Anything else (node_size 1, a rank outside [0, node_size)): every rank checks all.
  int node_rank = 0;
  int node_size = 1;
  std::FILE* warnings = nullptr;  // one line per rejected candidate (from one rank)
  CandidateCheck check;           // what the caller checks of a candidate besides its files
  TensorSource source;            // wanted tensors stored under other names
};

// Collective. Fills every tensor of `into` (same names, dtypes, shapes; a part is read from
// whatever slices cover it, so any stored layout loads into any wanted one) from the newest valid
// checkpoint in `dir` that also passes `options.check` on every rank; nullopt when there is none.
// A rejected candidate's warning comes from the lowest rank that found a problem, naming it.
std::optional<LoadedCheckpoint> load_latest(const std::string& dir, std::vector<NamedTensor>& into,
                                            comm::Communicator& comm, const LoadOptions& options);

// Removes the leftovers of interrupted saves (is_partial_save_name) from <dir>, nothing else.
// Rank 0 calls it at start-up.
int clean_partial(const std::string& dir);

}  // namespace cohort::ckpt
