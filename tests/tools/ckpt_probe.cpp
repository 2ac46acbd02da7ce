// ckpt_probe: saves and loads a fixed set of tensors through the ckpt module, on every rank of
// its launch, for tests/mpi/ckpt.sh.
//   ckpt_probe save DIR STEP [parts]  tensors filled from STEP (so each step's content differs);
//                                 with `parts`, each rank holds only its part of fc.weight and
//                                 fc.bias (as ZeRO's ranks hold optimizer state), cut unevenly
//   ckpt_probe clean DIR          removes leftovers of interrupted saves; prints how many
//   ckpt_probe load DIR [noverify] [parts] [uneven]  loads the newest valid checkpoint; checks
//                                 every tensor (or, with `parts`, this rank's part of the two)
//                                 equals what `save` wrote for the loaded step (with `uneven`,
//                                 odd ranks want the last tensor less), having started from
//                                 step -1's content, which differs from any saved step's in every
//                                 element (checked: a tensor the load left alone cannot pass);
//                                 prints one JSON line from
//                                 rank 0: {"step", "world_size_then", "rank_state",
//                                 "checked_bytes" (rank 0's), "checked_bytes_all" (every rank's)}
// Exit 0 on success, 1 when a loaded tensor differs ("rank R: NAME differs after loading") or a
// tensor started from the value it should load, 3 (IoError) when nothing loads.
#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cohort/ckpt/checkpoint.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/comm/mpi_session.hpp"
#include "cohort/error.hpp"

namespace {

// Mixed dtypes, shapes and layouts; sizes chosen so that slices cut tensors across ranks.
// Step -1 is what a load starts from: every element differs from every saved step's (step >= 0).
// The mask alternates, the same for every saved step; step -1's is its complement.
std::vector<cohort::ckpt::NamedTensor> tensors(std::int64_t step) {
  const double s = static_cast<double>(step);
  return {
      {"fc.weight", (at::arange(3000, at::kFloat) * 0.5 + s).reshape({60, 50})},
      {"fc.bias", at::arange(60, at::kDouble) - s},
      {"conv.weight", (at::arange(8 * 3 * 3 * 3, at::kFloat) + s)
                          .reshape({8, 3, 3, 3})
                          .contiguous(at::MemoryFormat::ChannelsLast)},
      {"emb.weight", (at::arange(500, at::kFloat) / 7 + s).to(at::kBFloat16).reshape({50, 10})},
      {"optim.step", at::arange(1, at::kLong) + step},
      {"mask", (at::arange(17, at::kLong) + (step < 0 ? 1 : 0)).remainder(2).to(at::kBool)},
  };
}

// Rank `rank`'s part of fc.weight and fc.bias out of `world`: uneven cuts (the first rank
// holds less), so that parts written by one world size and wanted by another never line up.
std::vector<cohort::ckpt::NamedTensor> as_parts(std::vector<cohort::ckpt::NamedTensor> all,
                                                int rank, int world) {
  for (std::size_t i = 0; i < 2; ++i) {
    auto& t = all[i];
    const std::int64_t n = t.tensor.numel();
    const auto cut = [&](int r) { return r == 0 ? 0 : std::min(n, n * r / world + r + 3); };
    const std::int64_t begin = cut(rank), end = rank + 1 == world ? n : cut(rank + 1);
    t.part = cohort::ckpt::TensorPart{t.tensor.sizes().vec(), begin};
    t.tensor = t.tensor.reshape({-1}).narrow(0, begin, end - begin).clone();
  }
  return all;
}

int save(const std::string& dir, std::int64_t step, bool parts, const std::string& attempt,
         cohort::comm::Communicator& comm) {
  cohort::ckpt::SaveRequest request;
  request.attempt = attempt;  // the temporary directory's tag: step-N.tmp-<attempt>
  request.step = step;
  request.epoch = step / 10;
  request.samples_seen = step * 64;
  request.config_hash = "xxh3-64:00000000000000ff";
  request.tensors = parts ? as_parts(tensors(step), comm.rank(), comm.size()) : tensors(step);
  request.rank_state = "rank " + std::to_string(comm.rank()) + " at " + std::to_string(step);
  const auto path = cohort::ckpt::save_checkpoint(dir, request, comm);
  if (comm.rank() == 0) std::printf("%s\n", path.c_str());
  return 0;
}

struct LoadHow {
  bool verify = true, parts = false, uneven = false;
};

// The tensors a rank loads: with `uneven`, odd ranks want one tensor fewer (the last).
std::vector<cohort::ckpt::NamedTensor> wanted(std::int64_t step, const LoadHow& how,
                                              cohort::comm::Communicator& comm) {
  auto all = how.parts ? as_parts(tensors(step), comm.rank(), comm.size()) : tensors(step);
  if (how.uneven && comm.rank() % 2 == 1) all.pop_back();
  return all;
}

int load(const std::string& dir, const LoadHow& how, const cohort::comm::MpiSession& session,
         cohort::comm::Communicator& comm) {
  auto into = wanted(-1, how, comm);  // wrong content, right names, dtypes, shapes and layouts
  const auto before = wanted(-1, how, comm);  // the same content, kept apart from the load
  cohort::ckpt::LoadOptions options;
  options.verify = how.verify;
  options.node_rank = session.node_rank();
  options.node_size = session.node_size();
  options.warnings = stderr;
  const auto loaded = cohort::ckpt::load_latest(dir, into, comm, options);
  COHORT_CHECK(loaded.has_value(), cohort::IoError, dir, ": no valid checkpoint");
  const auto step = loaded->manifest.step;
  const auto expected = wanted(step, how, comm);
  // A tensor whose starting content equals what it should load in any element would pass there
  // even if the load never wrote it (as the bool mask did while step -1's equalled every step's).
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (!before[i].tensor.ne(expected[i].tensor).all().item<bool>()) {
      std::fprintf(stderr,
                   "rank %d: %s started from a value equal in places to step %lld's: its "
                   "load would not be checked there\n",
                   comm.rank(), before[i].name.c_str(), static_cast<long long>(step));
      return 1;
    }
  }
  for (std::size_t i = 0; i < into.size(); ++i) {
    if (!at::equal(into[i].tensor, expected[i].tensor)) {
      std::fprintf(stderr, "rank %d: %s differs after loading\n", comm.rank(),
                   into[i].name.c_str());
      return 1;
    }
  }
  at::Tensor checked = at::tensor({loaded->checked_bytes}, at::kLong);
  comm.all_reduce(checked);
  if (comm.rank() == 0) {
    std::cout << nlohmann::json{{"step", loaded->manifest.step},
                                {"world_size_then", loaded->manifest.world_size},
                                {"rank_state", loaded->rank_state},
                                {"checked_bytes", loaded->checked_bytes},
                                {"checked_bytes_all", checked.item<std::int64_t>()}}
                     .dump()
              << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 2 ? argv[1] : "";
    cohort::comm::MpiSession session(&argc, &argv);
    auto comm = cohort::comm::make_communicator(session, cohort::comm::Backend::kMpi);
    if (mode == "clean" && argc == 3) {
      if (comm->rank() == 0) std::printf("%d\n", cohort::ckpt::clean_partial(argv[2]));
      return 0;
    }
    const std::vector<std::string> flags(argv + 3, argv + argc);
    const auto flag = [&](const char* f) {
      return std::find(flags.begin(), flags.end(), f) != flags.end();
    };
    if (mode == "save" && argc >= 4) {
      std::string attempt;  // attempt=NAME: the save's tag (default: rank 0's pid)
      for (const auto& f : flags) {
        if (f.rfind("attempt=", 0) == 0) attempt = f.substr(8);
      }
      return save(argv[2], std::stoll(argv[3]), flag("parts"), attempt, *comm);
    }
    if (mode == "load" && argc >= 3) {
      return load(argv[2], {!flag("noverify"), flag("parts"), flag("uneven")}, session, *comm);
    }
    std::fprintf(
        stderr,
        "usage: ckpt_probe save DIR STEP [parts] [attempt=NAME] | load DIR [noverify] [parts] "
        "[uneven]\n");
    return 2;
  } catch (const cohort::IoError& e) {
    std::fprintf(stderr, "ckpt_probe: %s\n", e.what());
    return 3;
  }
}
