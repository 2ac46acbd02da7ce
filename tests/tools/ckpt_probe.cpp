// ckpt_probe: saves and loads a fixed set of tensors through the ckpt module, on every rank of
// its launch, for tests/mpi/ckpt.sh.
//   ckpt_probe save DIR STEP      tensors filled from STEP (so each step's content differs)
//   ckpt_probe clean DIR          removes leftovers of interrupted saves; prints how many
//   ckpt_probe load DIR [noverify] loads the newest valid checkpoint; checks every tensor equals
//                                 what `save` wrote for the loaded step; prints one JSON line
//                                 from rank 0: {"step", "world_size_then", "rank_state"}
// Exit 0 on success, 1 when a loaded tensor differs, 3 (IoError) when nothing loads.
#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cohort/ckpt/checkpoint.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/comm/mpi_session.hpp"
#include "cohort/error.hpp"

namespace {

// Mixed dtypes, shapes and layouts; sizes chosen so that slices cut tensors across ranks.
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
      {"mask", at::arange(17, at::kLong).remainder(2).to(at::kBool)},
  };
}

int save(const std::string& dir, std::int64_t step, cohort::comm::Communicator& comm) {
  cohort::ckpt::SaveRequest request;
  request.step = step;
  request.epoch = step / 10;
  request.samples_seen = step * 64;
  request.config_hash = "xxh3-64:00000000000000ff";
  request.tensors = tensors(step);
  request.rank_state = "rank " + std::to_string(comm.rank()) + " at " + std::to_string(step);
  const auto path = cohort::ckpt::save_checkpoint(dir, request, comm);
  if (comm.rank() == 0) std::printf("%s\n", path.c_str());
  return 0;
}

int load(const std::string& dir, bool verify, cohort::comm::Communicator& comm) {
  auto into = tensors(-1);  // wrong content, right names, dtypes, shapes and layouts
  const auto loaded = cohort::ckpt::load_latest(dir, into, comm, verify, stderr);
  COHORT_CHECK(loaded.has_value(), cohort::IoError, dir, ": no valid checkpoint");
  const auto expected = tensors(loaded->manifest.step);
  for (std::size_t i = 0; i < into.size(); ++i) {
    if (!at::equal(into[i].tensor, expected[i].tensor)) {
      std::fprintf(stderr, "rank %d: %s differs after loading\n", comm.rank(),
                   into[i].name.c_str());
      return 1;
    }
  }
  if (comm.rank() == 0) {
    std::cout << nlohmann::json{{"step", loaded->manifest.step},
                                {"world_size_then", loaded->manifest.world_size},
                                {"rank_state", loaded->rank_state}}
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
    if (mode == "save" && argc == 4) return save(argv[2], std::stoll(argv[3]), *comm);
    if (mode == "load" && argc >= 3) {
      return load(argv[2], !(argc == 4 && std::string(argv[3]) == "noverify"), *comm);
    }
    std::fprintf(stderr, "usage: ckpt_probe save DIR STEP | load DIR [noverify]\n");
    return 2;
  } catch (const cohort::IoError& e) {
    std::fprintf(stderr, "ckpt_probe: %s\n", e.what());
    return 3;
  }
}
