#include "train/checkpointing.hpp"

#include <ATen/ops/empty_like.h>
#include <ATen/ops/tensor.h>
#include <c10/util/Exception.h>
#include <c10/util/string_utils.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <iterator>
#include <memory>
#include <set>
#include <utility>

#include "cohort/ckpt/inspect.hpp"
#include "cohort/ckpt/reader.hpp"
#include "cohort/ckpt/tensor_parts.hpp"
#include "cohort/comm/device.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/comm/mpi_session.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/error.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/slurm/job.hpp"
#include "common/checked_math.hpp"
#include "common/torch_compat.hpp"
#include "train/initial_values.hpp"
#include "train/tensor_reshard.hpp"

namespace cohort::train {
namespace {

torch_compat::OptimStateKey key_of(const at::Tensor& param) {
  return torch_compat::optim_state_key(param);
}

std::string bytes_of(const at::Tensor& state) {
  return std::string(static_cast<const char*>(state.data_ptr()),
                     static_cast<std::size_t>(state.numel()));
}

at::Tensor tensor_of(const char* bytes, std::size_t size) {
  at::Tensor state = at::empty({static_cast<std::int64_t>(size)}, at::kByte);
  std::memcpy(state.data_ptr(), bytes, size);
  return state;
}

// This rank's random state (rank_state): the CPU generator's bytes, then, on a rank with a GPU,
// that GPU's generator's (dropout on the device draws from it), so that a resumed GPU run is the
// uninterrupted one.
std::string generator_state() {
  std::string bytes = bytes_of(cpu_generator_state());
  if (const auto device = device_generator_state()) bytes += bytes_of(*device);
  return bytes;
}

// A CUDA generator's state: its seed and its Philox offset, 8 bytes each (LibTorch 2), after
// 800 bytes kept for old readers (LibTorch 1.13).
constexpr std::size_t kCudaGeneratorBytes[] = {16, 816};

// The sizes a rank_state may have here: this rank's own; the CPU part alone (a CPU run's
// checkpoint resumed on GPUs, whose device generator then starts from its seed); the CPU part and
// a GPU's (a GPU run's checkpoint resumed on a rank without one: that part has nowhere to go).
bool plausible_generator_size(std::size_t size) {
  const std::size_t cpu = bytes_of(cpu_generator_state()).size();
  if (size == generator_state().size() || size == cpu) return true;
  return std::any_of(std::begin(kCudaGeneratorBytes), std::end(kCudaGeneratorBytes),
                     [&](std::size_t gpu) { return size == cpu + gpu; });
}

// The state comes from a checkpoint file: anything but the sizes this LibTorch writes is refused
// here, naming the checkpoint, rather than by LibTorch's own check as an internal error; a GPU
// state LibTorch refuses (an odd Philox offset) is an IoError naming it too.
void set_generator_state(const std::string& bytes, const std::string& origin) {
  const std::size_t cpu = bytes_of(cpu_generator_state()).size();
  COHORT_CHECK(plausible_generator_size(bytes.size()), IoError, origin, ": rank_state is ",
               bytes.size(), " bytes, not a random generator state (", generator_state().size(),
               " bytes)");
  set_cpu_generator_state(tensor_of(bytes.data(), cpu));
  if (bytes.size() == cpu || !comm::rank_device()) return;
  try {
    set_device_generator_state(tensor_of(bytes.data() + cpu, bytes.size() - cpu));
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    COHORT_THROW(IoError, origin, ": rank_state's GPU generator state is not one LibTorch takes (",
                 what.substr(0, what.find('\n')), ")");
  }
}

// The writer thread waits for slower ranks while training runs: sleeping, not spinning.
comm::CommOptions quiet_waits() {
  comm::CommOptions options;
  options.low_cpu_wait = true;
  return options;
}

// The metric watch's values from its tensor.
std::vector<double> watch_values(const at::Tensor& t) {
  const auto* d = t.data_ptr<double>();
  return std::vector<double>(d, d + t.numel());
}

// A checkpoint from before the metric watch has no trainer.watch: it loads a fresh state (no
// evaluation yet, nothing kept) instead of being skipped; any other tensor as `inner` says.
ckpt::TensorSource with_fresh_watch(ckpt::TensorSource inner) {
  return [inner = std::move(inner)](ckpt::CheckpointReader& reader, const ckpt::NamedTensor& want,
                                    at::Tensor& buffer, bool verify) {
    if (want.name == "trainer.watch" && reader.manifest().find(want.name) == nullptr) {
      const auto fresh = MetricWatch({}).as_values();
      buffer.copy_(at::tensor(c10::ArrayRef<double>(fresh), at::kDouble));
      return true;
    }
    return inner && inner(reader, want, buffer, verify);
  };
}

}  // namespace

TrainCheckpoints::TrainCheckpoints(const TrainConfig& config, std::string config_hash,
                                   const comm::MpiSession& session, torch::nn::Module& model,
                                   torch::optim::Optimizer& optimizer)
    : options_(config.checkpoint),
      optim_(config.optim),
      config_hash_(std::move(config_hash)),
      model_(model),
      optimizer_(optimizer),
      comm_(comm::make_communicator(session, comm::Backend::kMpi, quiet_waits())),  // its own
      dir_(config.checkpoint_dir()) {
  // Inside Slurm a save attempt is named by the job and its restart: a requeued job never writes
  // into a leftover of the previous run.
  const auto job = slurm::current_job(env::Environment::from_process());
  if (job.in_job) attempt_ = job.job_id + "-" + std::to_string(job.restart_count);
  nodes_ = std::max(1, session.size() / std::max(1, session.node_size()));
  node_rank_ = session.node_rank();
  node_size_ = session.node_size();
}

void TrainCheckpoints::set_layout(int data, int tensor_rank, int tensor,
                                  std::map<std::string, pipeline::SplitLayout> split) {
  data_ = data;
  tensor_rank_ = tensor_rank;
  tensor_ = tensor;
  split_ = std::move(split);
}

std::string TrainCheckpoints::saved_name(const std::string& parameter) const {
  if (split_.count(parameter) == 0) return parameter;
  return parameter + ".tp" + std::to_string(tensor_rank_) + "of" + std::to_string(tensor_);
}

// A checkpoint written with another tensor split is resharded from its layout entries; one
// written before they existed (or with none) cannot be: say so plainly instead of skipping every
// checkpoint and starting over.
void TrainCheckpoints::check_tensor_split() const {
  std::string latest;
  try {
    latest = dir_ + "/" + ckpt::read_latest(dir_);
  } catch (const IoError&) {
    return;  // nothing to resume
  }
  ckpt::Manifest manifest;
  try {
    manifest = ckpt::CheckpointReader(latest).manifest();
  } catch (const IoError&) {
    return;  // load_latest() reports it and tries the others
  }
  int written = 1;
  for (const auto& t : manifest.tensors) {
    const auto at = t.name.rfind(".tp");
    const auto of = t.name.rfind("of");
    if (at != std::string::npos && of != std::string::npos && of > at) {
      written = std::atoi(t.name.c_str() + of + 2);
      break;
    }
  }
  COHORT_CHECK(written == tensor_ || !ckpt::tensor_split_params(manifest).empty(), ConfigError,
               latest, "/manifest.json: written with parallel.tensor = ", written,
               " without the layouts of its parts (an older Cohort); this run has "
               "parallel.tensor = ",
               tensor_, ": such a checkpoint loads only with the same parallel.tensor");
}

TrainCheckpoints::~TrainCheckpoints() {
  if (writer_.joinable()) writer_.join();  // never leave a thread writing into freed state
}

void TrainCheckpoints::finish() {
  before_update();
  if (writer_.joinable()) writer_.join();
  if (writer_error_) std::rethrow_exception(std::exchange(writer_error_, nullptr));
}

// The training state as named tensors. create_optimizer_state: give every parameter the state
// its optimizer would create at its first step (zeros), so that a checkpoint can fill it.
// "layout.<name>.tp<r>of<t>" = [dim, whole, kept indices...] for each split parameter.
void TrainCheckpoints::add_layouts(std::vector<ckpt::NamedTensor>& out) const {
  for (const auto& [name, layout] : split_) {
    at::Tensor value = at::empty({layout.kept.numel() + 2}, at::kLong);
    value[0] = layout.dim;
    value[1] = layout.whole;
    value.narrow(0, 2, layout.kept.numel()).copy_(layout.kept);
    out.push_back({"layout." + saved_name(name), value});
  }
}

// `initial_values`: the model holds values set_initial_values()'s `remake` makes again.
std::vector<ckpt::NamedTensor> TrainCheckpoints::tensors(bool create_optimizer_state,
                                                         bool initial_values) {
  std::vector<ckpt::NamedTensor> out;
  adamw_steps_.clear();
  if (part_values_) {
    for (const auto& part : parts_) {
      out.push_back({"model." + saved_name(part.parameter), part.value,
                     ckpt::TensorPart{part.shape, part.offset}});
    }
  }
  for (const auto& p : model_.named_parameters()) {
    // ZeRO 3: a trained parameter is saved by its pieces' holders (above), even where this rank
    // holds none of it; frozen ones stay whole.
    if (part_values_ && p.value().requires_grad()) continue;
    out.push_back({"model." + saved_name(p.key()), p.value()});
    out.back().fresh = initial_values;
  }
  for (const auto& b : model_.named_buffers()) {
    out.push_back({"model." + b.key(), b.value()});
    out.back().fresh = initial_values;
  }
  if (!parts_.empty()) {
    for (const auto& part : parts_) add_optimizer_state(part, false, create_optimizer_state, out);
    return out;
  }
  for (const auto& p : model_.named_parameters()) {
    if (!p.value().requires_grad()) continue;  // frozen (model.freeze): not in the optimizer
    add_optimizer_state({p.key(), p.value(), 0, p.value().sizes().vec()}, true,
                        create_optimizer_state, out);
  }
  return out;
}

// One optimized tensor's state (a whole parameter's, or a ZeRO part of it), as named tensors.
void TrainCheckpoints::add_optimizer_state(const OptimizedPart& part, bool whole, bool create,
                                           std::vector<ckpt::NamedTensor>& out) {
  const bool adamw = optim_.name == Optimizer::kAdamw;
  const bool momentum = optim_.momentum != 0;
  auto& state = optimizer_.state();
  const std::string name = "optim." + saved_name(part.parameter);
  const at::Tensor& value = part.value;
  const auto key = key_of(value);
  // State made here exists only to be filled by the load (a fresh start clears it): left
  // uninitialised and marked fresh, the load reads straight into it (ckpt::NamedTensor::fresh).
  const bool created = create && state.find(key) == state.end() && (adamw || momentum);
  if (created) {
    if (adamw) {
      auto s = std::make_unique<torch::optim::AdamWParamState>();
      s->exp_avg(at::empty_like(value)).exp_avg_sq(at::empty_like(value));
      state[key] = std::move(s);
    } else {
      auto s = std::make_unique<torch::optim::SGDParamState>();
      s->momentum_buffer(at::empty_like(value));
      state[key] = std::move(s);
    }
  }
  const auto it = state.find(key);
  if (it == state.end()) return;
  std::optional<ckpt::TensorPart> held;
  if (!whole) held = ckpt::TensorPart{part.shape, part.offset};
  if (adamw) {
    auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
    out.push_back({name + ".exp_avg", s.exp_avg(), held});
    out.back().fresh = created;
    out.push_back({name + ".exp_avg_sq", s.exp_avg_sq(), held});
    out.back().fresh = created;
    // AdamW counts steps per parameter in a plain integer: carried in a tensor, written back
    // by restore_adamw_steps() after a load. Every part of a parameter has the same count.
    adamw_steps_.emplace_back(&s, at::tensor({s.step()}, at::kLong));
    out.push_back({name + ".step", adamw_steps_.back().second});
  } else {
    out.push_back({name + ".momentum_buffer",
                   static_cast<torch::optim::SGDParamState&>(*it->second).momentum_buffer(), held});
    out.back().fresh = created;
  }
}

std::optional<ResumePoint> TrainCheckpoints::resume(std::int64_t batch_size, std::FILE* progress) {
  if (comm_->rank() == 0) {
    std::error_code error;
    const int removed = std::filesystem::exists(dir_, error) ? ckpt::clean_partial(dir_) : 0;
    if (removed > 0 && progress != nullptr) {
      std::fprintf(progress, "removed %d leftover(s) of interrupted saves from %s\n", removed,
                   dir_.c_str());
    }
  }
  comm_->barrier();  // nobody looks at the directory while rank 0 cleans it
  // set_initial_values() holds for this resume() alone.
  const auto remake = std::move(remake_);
  remake_ = nullptr;
  if (!options_.resume) return std::nullopt;
  check_tensor_split();
  auto wanted = tensors(/*create_optimizer_state=*/true, /*initial_values=*/remake != nullptr);
  // The metric watch's state, before the position (which `plausible` finds last).
  const std::size_t watch_index = wanted.size();
  at::Tensor watch = at::zeros({static_cast<std::int64_t>(MetricWatch::kStateSize)}, at::kDouble);
  wanted.push_back({"trainer.watch", watch});
  at::Tensor position = at::zeros({4}, at::kLong);
  wanted.push_back({"trainer.position", position});
  const std::int64_t global_batch = batch_size * (data_ > 0 ? data_ : comm_->size());
  const std::size_t generator_bytes = generator_state().size();
  // Values a checkpoint holds that no shape check covers: a candidate whose position or random
  // state is not what this trainer writes is skipped like a corrupt one, on every rank together.
  const auto plausible = [&](const ckpt::LoadedCheckpoint& c, const std::vector<at::Tensor>& v) {
    const auto* p = v.back().data_ptr<std::int64_t>();
    COHORT_CHECK(
        p[0] == c.manifest.step && p[1] >= 0 && p[2] >= 0 && p[3] >= 1 && checked::mul(p[2], p[3]),
        IoError, c.path, ": tensor 'trainer.position' [", p[0], ", ", p[1], ", ", p[2], ", ", p[3],
        "] does not describe step ", c.manifest.step);
    COHORT_CHECK(c.rank_state.empty() || plausible_generator_size(c.rank_state.size()), IoError,
                 c.path, ": rank_state is ", c.rank_state.size(),
                 " bytes, not a random generator state (", generator_bytes, " bytes)");
    if (watch_ != nullptr) {
      MetricWatch probe = *watch_;
      const std::string problem = probe.from_values(watch_values(v[watch_index]), p[0]);
      COHORT_CHECK(problem.empty(), IoError, c.path, ": tensor 'trainer.watch' ", problem);
    }
  };
  ckpt::LoadOptions load;
  load.verify = options_.verify;
  load.node_rank = node_rank_;
  load.node_size = node_size_;
  load.warnings = progress;
  load.check = plausible;
  load.source = with_fresh_watch(tensor_reshard_source(split_, tensor_));
  const auto loaded = ckpt::load_latest(dir_, wanted, *comm_, load);
  if (!loaded) {
    optimizer_.state().clear();  // a fresh start: the optimizer creates its own state
    // A candidate may have been read into the model half-way: its initial values made again.
    if (remake && !ckpt::checkpoint_candidates(dir_).empty()) remake();
    return std::nullopt;
  }
  for (auto& [state, tensor] : adamw_steps_) state->step(tensor.item<std::int64_t>());
  const auto* p = position.data_ptr<std::int64_t>();
  if (watch_ != nullptr) {
    watch_->from_values(watch_values(watch), p[0]);  // checked: plausible
    std::lock_guard<std::mutex> lock(best_mutex_);   // kept apart from retention again
    best_steps_.clear();
    for (const auto& kept : watch_->kept()) best_steps_.push_back(kept.first);
  }
  ResumePoint point{p[0], {p[1], p[2]}, loaded->path};
  if (loaded->manifest.world_size == comm_->size() && p[3] == global_batch &&
      !loaded->rank_state.empty()) {
    set_generator_state(loaded->rank_state, loaded->path);
  } else {  // another world: the same global sample count within the epoch, in new batches
    point.loader.batch = p[2] * p[3] / global_batch;  // checked by `plausible`
  }
  last_saved_ = point.step;
  return point;
}

std::string TrainCheckpoints::maybe_save(std::int64_t step, const data::LoaderState& loader,
                                         std::int64_t batch_size, bool final) {
  const std::int64_t every = options_.every_steps;
  const bool due = final ? every > 0 || options_.at_end : every > 0 && step % every == 0;
  if (!due || step == last_saved_) return "";
  save(step, loader, batch_size, options_.async);
  return dir_ + "/" + ckpt::step_dir_name(step);
}

void TrainCheckpoints::save_best(std::int64_t step, const data::LoaderState& loader,
                                 std::int64_t batch_size, std::vector<std::int64_t> kept) {
  {
    std::lock_guard<std::mutex> lock(best_mutex_);
    best_steps_ = std::move(kept);
  }
  if (step != last_saved_) {
    save(step, loader, batch_size, options_.async);  // its retention links `best` once committed
  } else if (comm_->rank() == 0 && !in_flight()) {
    std::lock_guard<std::mutex> lock(best_mutex_);  // committed already: link it now
    update_best_link();
  }
}

void TrainCheckpoints::save_now(std::int64_t step, const data::LoaderState& loader,
                                std::int64_t batch_size) {
  if (step != last_saved_) save(step, loader, batch_size, /*async=*/false);
  finish();
}

void TrainCheckpoints::save(std::int64_t step, const data::LoaderState& loader,
                            std::int64_t batch_size, bool async) {
  if (before_save_) before_save_();
  ckpt::SaveRequest request;
  request.step = step;
  request.epoch = loader.epoch;
  const std::int64_t global_batch = batch_size * (data_ > 0 ? data_ : comm_->size());
  request.samples_seen = step * global_batch * optim_.accumulation;
  request.config_hash = config_hash_;
  request.attempt = attempt_;
  request.nodes = nodes_;
  request.tensors = tensors(/*create_optimizer_state=*/false);
  add_layouts(request.tensors);
  request.tensors.push_back(
      {"trainer.position",
       at::tensor({step, loader.epoch, loader.batch, global_batch}, at::kLong)});
  const auto watch = watch_ != nullptr ? watch_->as_values() : MetricWatch({}).as_values();
  request.tensors.push_back(
      {"trainer.watch", at::tensor(c10::ArrayRef<double>(watch), at::kDouble)});
  request.rank_state = generator_state();
  finish();  // one save in flight at most
  last_saved_ = step;
  const auto start = std::chrono::steady_clock::now();
  const std::string path = dir_ + "/" + ckpt::step_dir_name(step);
  const auto committed = [this, start, step, path, async] {
    if (comm_->rank() != 0 || !on_committed_) return;
    on_committed_(step, path,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                  async);
  };
  if (!async) {
    ckpt::save_checkpoint(dir_, request, plans_.plan(request, *comm_), *comm_);
    committed();
    if (comm_->rank() == 0) start_background([this] { apply_retention(); });  // off the path
    return;
  }
  // Buffers (BatchNorm statistics) change in the next forward pass: copied now. Parameters and
  // optimizer state change only in the next optimizer step: the writer copies its own part of them
  // first, while the next forward and backward run, and before_update() waits for that copy.
  std::set<std::string> buffers;
  for (const auto& b : model_.named_buffers()) buffers.insert("model." + b.key());
  for (auto& t : request.tensors) {
    if (buffers.count(t.name) != 0) t.tensor = t.tensor.clone();
  }
  auto copied = std::make_shared<std::promise<void>>();
  snapshot_ = copied->get_future();
  start_background([this, copied, committed, request = std::move(request)] {
    bool released = false;
    try {
      const ckpt::ShardPlan& plan = plans_.plan(request, *comm_);
      const auto own = ckpt::snapshot_own_part(request, plan, comm_->rank());
      copied->set_value();
      released = true;
      ckpt::save_checkpoint(dir_, own, plan, *comm_);
      committed();
      if (comm_->rank() == 0) apply_retention();
    } catch (...) {
      if (!released) copied->set_value();  // never leave the training thread waiting
      throw;
    }
  });
}

void TrainCheckpoints::before_update() {
  if (snapshot_.valid()) snapshot_.get();
}

// Runs `task` on the background thread (one at a time); its error is kept for finish().
void TrainCheckpoints::start_background(std::function<void()> task) {
  writing_.store(true, std::memory_order_release);
  writer_ = std::thread([this, task = std::move(task)] {
    // The rank's device current here too: the save copies CUDA tensors to the host.
    comm::make_rank_device_current();
    try {
      task();
    } catch (...) {  // handed to the training thread by finish(), never dropped
      writer_error_ = std::current_exception();
    }
    writing_.store(false, std::memory_order_release);
  });
}

}  // namespace cohort::train
