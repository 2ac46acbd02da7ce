#include "cohort/bench/ckpt.hpp"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <fcntl.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <utility>

#include "bench/common.hpp"
#include "ckpt/files.hpp"
#include "cohort/ckpt/inspect.hpp"
#include "cohort/ckpt/shard_file.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/unique_fd.hpp"
#include "cohort/models/model.hpp"
#include "cohort/settings/config.hpp"
#include "train/checkpointing.hpp"
#include "train/initial_values.hpp"

namespace cohort::bench {

// The trainer's names (and the settings and models it sees) unqualified: a benchmark of the
// trainer is written in its terms.
using namespace ::cohort::train;  // NOLINT(google-build-using-namespace)

namespace {

// A raw read(2) of a file: the baseline a load is compared with (the raw write is the ckpt
// module's own write_file_synced: write(2) + fsync, nothing else).
void raw_read(const std::string& path, void* out, std::size_t bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  COHORT_CHECK(fd.get() >= 0, IoError, path, ": cannot open: ", std::strerror(errno));
  for (std::size_t done = 0; done < bytes;) {
    const ssize_t n = ::read(fd.get(), static_cast<char*>(out) + done, bytes - done);
    COHORT_CHECK(n > 0 || errno == EINTR, IoError, path, ": short read: ", std::strerror(errno));
    if (n > 0) done += static_cast<std::size_t>(n);
  }
}

// The model, its optimizer with state, and the trainer's checkpoint path twice (sync, async)
// into one checkpoint directory.
struct Setup {
  Setup(Config sync, Config async) : sync_config(std::move(sync)), async_config(std::move(async)) {}
  Config sync_config, async_config;
  std::shared_ptr<Model> model;
  std::unique_ptr<torch::optim::SGD> sgd;
  std::unique_ptr<TrainCheckpoints> sync, async;
  at::Tensor x, y;
  std::int64_t step = 0;

  // One training step, as the trainer does it; returns the seconds held in before_update().
  double train_step() {
    sgd->zero_grad();
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    const auto start = Clock::now();
    async->before_update();
    const double held = seconds_since(start);
    sgd->step();
    return held;
  }
  std::string save(TrainCheckpoints& how) {
    ++step;
    return how.maybe_save(step, data::LoaderState{0, step}, x.size(0), false);
  }
};

std::unique_ptr<Setup> make_setup(const comm::MpiSession& session, const CkptBenchOptions& o,
                                  const std::string& dir) {
  std::string hidden;
  for (const auto h : o.hidden) hidden += (hidden.empty() ? "" : ",") + std::to_string(h);
  const std::vector<std::string> common = {
      "model.name=mlp",           "model.hidden=" + hidden,
      "optim.momentum=0.9",       "checkpoint.dir=" + dir + "/checkpoints",
      "checkpoint.every_steps=1", "checkpoint.keep_last=1"};
  auto with = [&](const char* async) {
    auto overrides = common;
    overrides.push_back(std::string("checkpoint.async=") + async);
    return Config::load("", overrides);
  };
  auto s = std::make_unique<Setup>(with("false"), with("true"));
  s->model = build_model(s->sync_config.model, ModelInput{{o.features}, 10});
  s->sgd = std::make_unique<torch::optim::SGD>(s->model->parameters(),
                                               torch::optim::SGDOptions(0.01).momentum(0.9));
  s->sync = std::make_unique<TrainCheckpoints>(s->sync_config, s->sync_config.hash(), session,
                                               *s->model, *s->sgd);
  s->async = std::make_unique<TrainCheckpoints>(s->async_config, s->async_config.hash(), session,
                                                *s->model, *s->sgd);
  s->x = at::randn({o.batch, o.features});
  s->y = at::randint(0, 10, {o.batch}, at::kLong);
  s->train_step();  // the momentum buffers exist from here on
  return s;
}

// The load of a restarting process, as `cohort train` does it: a model built anew (its initial
// values, which the load reads over in place: set_initial_values()) with an optimizer without
// state, and resume(). Only the resume is timed.
double restart_load(const comm::MpiSession& session, const Setup& s, const CkptBenchOptions& o,
                    comm::Communicator& comm) {
  const ModelInput input{{o.features}, 10};
  const at::Tensor generator = cpu_generator_state();
  const auto model = build_model(s.sync_config.model, input);
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  TrainCheckpoints restart(s.sync_config, s.sync_config.hash(), session, *model, sgd);
  restart.set_initial_values([&] { remake_values(s.sync_config.model, input, generator, *model); });
  return timed(comm, [&] { restart.resume(o.batch, nullptr); });
}

std::int64_t checkpoint_bytes(const std::string& step_dir) {
  std::int64_t bytes = 0;
  for (const auto& t : ckpt::read_manifest(step_dir).tensors) {
    bytes += t.numel() * ckpt::dtype_bytes(t.dtype);
  }
  return bytes;
}

struct AsyncRound {
  double stall_s = 0, background_s = 0;
  std::vector<double> step_ms;
};

// One asynchronous save with training going on until the writer is done.
AsyncRound async_round(Setup& s, comm::Communicator& comm) {
  AsyncRound r;
  comm.barrier();
  const auto start = Clock::now();
  s.save(*s.async);
  r.stall_s = seconds_since(start);
  do {  // at least one step, so that there is a step time to compare
    const auto step_start = Clock::now();
    r.stall_s += s.train_step();
    r.step_ms.push_back(seconds_since(step_start) * 1e3);
  } while (s.async->in_flight());
  r.background_s = seconds_since(start);
  s.async->finish();
  r.stall_s = slowest(comm, r.stall_s);
  r.background_s = slowest(comm, r.background_s);
  return r;
}

// The training step's time (ms) five times, before any round: what a save's step is compared with.
std::vector<double> plain_steps(Setup& s) {
  std::vector<double> ms;
  for (int i = 0; i < 5; ++i) {
    const auto start = Clock::now();
    s.train_step();
    ms.push_back(seconds_since(start) * 1e3);
  }
  return ms;
}

// Each round's figures, as measured: the result's medians, ratios and rounds come from them.
struct Rounds {
  std::vector<double> writes, saves, stalls, background, during, loads, restarts, reads;
};

// The result's figures from the rounds: medians, and ratios of medians and of the best rounds.
void summarize(const Rounds& m, const std::vector<double>& base_steps, std::size_t share,
               CkptBenchResult& r) {
  r.raw_write_rounds = m.writes;
  r.sync_save_rounds = m.saves;
  r.async_stall_rounds = m.stalls;
  r.raw_write_s = median(m.writes);
  r.sync_save_s = median(m.saves);
  r.write_ratio = r.raw_write_s / r.sync_save_s;
  r.write_ratio_best = *std::min_element(m.writes.begin(), m.writes.end()) /
                       *std::min_element(m.saves.begin(), m.saves.end());
  r.raw_write_gbs = static_cast<double>(share * r.ranks) / r.raw_write_s / 1e9;
  r.save_gbs = static_cast<double>(r.checkpoint_bytes) / r.sync_save_s / 1e9;
  r.async_stall_s = median(m.stalls);
  r.stall_share = r.async_stall_s / r.sync_save_s;
  r.async_background_s = median(m.background);
  r.step_ms = median(base_steps);
  r.step_during_save_ms = median(m.during);
  r.load_s = median(m.loads);
  r.raw_read_s = median(m.reads);
  r.load_ratio = r.raw_read_s / r.load_s;
  r.restart_load_s = median(m.restarts);
  r.restart_load_ratio = r.raw_read_s / r.restart_load_s;
  const double fastest_read = *std::min_element(m.reads.begin(), m.reads.end());
  r.load_ratio_best = fastest_read / *std::min_element(m.loads.begin(), m.loads.end());
  r.restart_load_ratio_best =
      fastest_read / *std::min_element(m.restarts.begin(), m.restarts.end());
  r.load_rounds = m.loads;
  r.restart_load_rounds = m.restarts;
  r.raw_read_rounds = m.reads;
}

}  // namespace

CkptBenchResult bench_ckpt(const comm::MpiSession& session, const CkptBenchOptions& o) {
  at::set_num_threads(o.threads);
  env::set_blas_threads(1);  // as the trainer does (train.blas_threads): no spinning BLAS pool
  auto comm = comm::make_communicator(session, comm::Backend::kMpi);
  const std::string dir = shared_dir(*comm, o.dir, "ckpt");
  auto s = make_setup(session, o, dir);
  CkptBenchResult r;
  r.ranks = comm->size();
  r.checkpoint_bytes = checkpoint_bytes(s->save(*s->sync));  // warm-up saves, unmeasured
  s->save(*s->async);
  s->async->finish();
  const std::vector<double> base_steps = plain_steps(*s);
  const auto total = static_cast<std::size_t>(r.checkpoint_bytes);
  const std::size_t share = total / static_cast<std::size_t>(r.ranks);
  at::Tensor buffer = at::randint(0, 255, {static_cast<std::int64_t>(total)}, at::kByte);
  at::Tensor readback = at::empty_like(buffer);
  // A new file per round, the previous one deleted afterwards, as checkpoints come and go: both
  // sides then draw on the same supply of fresh page-cache pages (rewriting one file reuses its
  // pages, which on the build VMs is several times faster than fresh ones).
  const auto raw_file = [&](int rank, int round) {
    return dir + "/raw-" + std::to_string(rank) + "-" + std::to_string(round);
  };
  Rounds m;
  for (int round = 0; round < o.rounds; ++round) {
    const auto* mine = static_cast<const char*>(buffer.data_ptr()) + share * comm->rank();
    m.writes.push_back(timed(*comm, [&] {
      ckpt::write_file_synced(raw_file(comm->rank(), round), std::string_view(mine, share));
    }));
    if (round > 0) std::filesystem::remove(raw_file(comm->rank(), round - 1));
    m.saves.push_back(timed(*comm, [&] { s->save(*s->sync); }));
    s->sync->finish();  // its retention pass (background, rank 0) must not overlap what follows
    const AsyncRound a = async_round(*s, *comm);
    m.stalls.push_back(a.stall_s);
    m.background.push_back(a.background_s);
    m.during.insert(m.during.end(), a.step_ms.begin(), a.step_ms.end());
    m.loads.push_back(timed(*comm, [&] { s->sync->resume(o.batch, nullptr); }));
    m.restarts.push_back(restart_load(session, *s, o, *comm));
    m.reads.push_back(timed(*comm, [&] {
      for (int k = 0; k < r.ranks; ++k) {
        raw_read(raw_file(k, round), static_cast<char*>(readback.data_ptr()) + share * k, share);
      }
    }));
  }
  comm->barrier();
  if (comm->rank() == 0) std::filesystem::remove_all(dir);
  summarize(m, base_steps, share, r);
  return r;
}

}  // namespace cohort::bench
