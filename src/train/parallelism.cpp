#include "train/parallelism.hpp"

#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include <torch/cuda.h>

#include "cohort/comm/device.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/env/gpu_binding.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/error.hpp"
#include "cohort/pipeline/partition.hpp"
#include "cohort/pipeline/tensor_parallel.hpp"
#include "cohort/settings/config.hpp"
#include "train/zero_units.hpp"

namespace cohort::train {

namespace {

// Slurm gave this node GPUs (SLURM_GPUS_ON_NODE) and CUDA_VISIBLE_DEVICES, where set, names some:
// when LibTorch then sees none, the CUDA runtime's failure says why, as its fault class (no
// device, an initialisation error: a dead driver or a GPU gone, the node's, 78). A runtime that
// counts them: a CPU-only LibTorch, refused as the job's configuration. A CUDA_VISIBLE_DEVICES
// that hides them on purpose (empty, or starting with -1, where CUDA stops reading it): the
// job's configuration too, never the node's.
bool node_given_gpus(const env::Environment& environment) {
  if (environment.get_int("SLURM_GPUS_ON_NODE", 0, 1 << 20).value_or(0) == 0) return false;
  const auto visible = environment.get("CUDA_VISIBLE_DEVICES");
  if (!visible) return true;
  const auto first = visible->find_first_not_of(" ,");
  return first != std::string::npos && (*visible)[first] != '-';
}

}  // namespace

RankDevice start_rank_device(const ParallelConfig& options, const comm::MpiSession& session,
                             std::exception_ptr& refused) {
  // MPI: parallel.devices as given. A build without NCCL: no GPU to choose; the communicator's
  // own refusal, made next, says why in one line.
  if (options.backend != GradBackend::kNccl || !comm::backend_compiled(comm::Backend::kNccl)) {
    return choose_rank_device(GradBackend::kMpi, pipeline::parse_devices(options.devices), {}, 0);
  }
  try {
    // torch's count, not CUDA's: the model's tensors are LibTorch's (0 for a CPU-only LibTorch).
    const int cuda_devices = static_cast<int>(torch::cuda::device_count());
    const env::Environment environment = env::Environment::from_process();
    if (cuda_devices == 0 && node_given_gpus(environment)) comm::cuda_runtime_devices();
    const auto configured = pipeline::parse_devices(options.devices);  // refuses CUDA without any
    // The node's ranks by MPI's shared-memory split (the launcher's view was checked against it).
    const auto binding =
        env::bind_gpu(environment, session.node_rank(), session.node_size(), cuda_devices);
    RankDevice device = choose_rank_device(options.backend, configured, binding, cuda_devices);
    comm::set_rank_device(device.cuda);
    return device;
  } catch (const Error&) {
    refused = std::current_exception();
    return {};
  }
}

void agree_rank_devices(comm::Communicator& control, const std::exception_ptr& refused) {
  at::Tensor lowest = at::zeros({1}, at::kLong);
  lowest[0] = refused ? control.rank() : control.size();
  comm::CollectiveOptions min;
  min.op = comm::ReduceOp::kMin;
  control.all_reduce(lowest, min);
  if (refused) std::rethrow_exception(refused);
  const std::int64_t rank = lowest.item<std::int64_t>();
  COHORT_CHECK(rank == control.size(), EnvironmentError, "parallel.backend = nccl: rank ", rank,
               " has no GPU of its own (its message says why); every rank stops with it");
}

// The batch dividing into micro-batches, and no accumulation with stages, were checked at load.
Parallelism::Parallelism(const ParallelConfig& options, RankDevice device, std::string model_name,
                         comm::Communicator& world, int ranks_per_node)
    : options_(options),
      device_(std::move(device)),
      model_name_(std::move(model_name)),
      world_(world),
      layout_(env::ParallelLayout::make(world.size(), static_cast<int>(options.pipeline_stages),
                                        static_cast<int>(options.tensor), ranks_per_node)),
      coords_(layout_.coords(world.rank())) {
  micro_batches_ = pipelined() ? static_cast<int>(options.micro_batches) : 1;
  build_groups();
}

Parallelism::~Parallelism() = default;

// Every split is collective over the world, so every rank makes the same calls in the same order.
void Parallelism::build_groups() {
  if (layout_.stages() == 1 && layout_.tensor() == 1) return;  // pure data parallelism
  const int rank = world_.rank();
  data_ = world_.split(layout_.data_color(rank), rank);
  pipe_ = world_.split(layout_.pipeline_color(rank), coords_.stage);
  tensor_ = world_.split(layout_.tensor_color(rank), coords_.tensor);
  const bool end = coords_.stage == 0 || coords_.stage + 1 == layout_.stages();
  if (pipelined()) shared_ = world_.split(end ? layout_.pipeline_color(rank) : -1, coords_.stage);
}

void Parallelism::check_tensor_groups(comm::Communicator& control) const {
  if (layout_.tensor() == 1) return;
  at::Tensor mine = at::zeros({1}, at::kLong);
  mine[0] = static_cast<std::int64_t>(std::hash<std::string>{}(env::hostname()));
  at::Tensor all = at::zeros({control.size()}, at::kLong);
  control.all_gather(all, mine);
  // Every rank checks every group, so that all of them stop together.
  std::vector<long long> hosts(static_cast<std::size_t>(control.size()));
  for (int r = 0; r < control.size(); ++r) hosts[r] = all[r].item<std::int64_t>();
  layout_.check_tensor_hosts(hosts);
}

bool Parallelism::scores() const {
  return coords_.stage + 1 == layout_.stages() && coords_.tensor == 0;
}

void Parallelism::attach(std::shared_ptr<Model> model, const at::Tensor& sample,
                         ddp::DdpOptions ddp, int recompute, Materializer* materializer) {
  model_ = std::move(model);
  COHORT_CHECK(recompute == 0 || !model_->blocks().empty(), ConfigError, "model.recompute: model ",
               model_name_,
               " is not a sequence of blocks (docs/models.md), so it has none to recompute; set "
               "model.recompute = none");
  const bool zero3 = zero().parameters();
  COHORT_CHECK(!zero3 || !model_->blocks().empty(), ConfigError, "parallel.zero = 3: model ",
               model_name_,
               " is not a sequence of blocks (docs/models.md), and stage 3 gathers parameters "
               "block by block; use parallel.zero = 2");
  if (pipelined() || device_.configured || recompute > 0 || zero3) {
    // The stage's blocks over the devices (NCCL: the rank's GPU).
    keep_stage(sample, device_.devices, materializer != nullptr);
    stage_->set_recompute(recompute);
    model_.reset();  // the blocks of other stages go; the stage holds its own
  } else if (!device_.devices.empty()) {
    model_->to(device_.devices.front());  // NCCL: the whole model on the rank's GPU, before DDP
  }
  if (materializer != nullptr) materialize_kept(*materializer, ddp);
  sort_parameters();
  ddp.zero = zero().stage;
  // The tied copies' gradients are summed across the two stages after each step: under ZeRO
  // each copy gets a bucket of its own, so that both stages cut it into the same shards.
  if (stage_) ddp.alone = stage_->shared_parameters();
  if (stage_) ddp.arrivals = stage_->gradient_arrivals();  // a tied module under recompute
  if (zero3) ddp.units = stage_->parameter_blocks();
  ddp_ = std::make_unique<ddp::DistributedDataParallel>(trained(), data_group(), ddp);
  if (zero3) connect_zero3(*stage_, *ddp_);
  if (materializer != nullptr) {
    materializer->materialize(trained());  // what no unit gave values to (frozen blocks)
    ddp_->broadcast_buffers();  // buffers drawn after DDP's own broadcast: rank 0's to all
  }
}

// The modules this rank keeps get their values; under ZeRO 3 those used by several blocks now
// (kept whole), each block's as DDP makes its unit's shard.
void Parallelism::materialize_kept(Materializer& materializer, ddp::DdpOptions& ddp) {
  if (!zero().parameters()) {
    materializer.materialize(trained());
    return;
  }
  std::map<std::string, int> users;
  const std::size_t blocks = stage_->block_names().size();
  for (std::size_t b = 0; b < blocks; ++b) {
    for (const auto& entry : stage_->block_modules(b)) ++users[entry.first];
  }
  for (std::size_t b = 0; b < blocks; ++b) {
    for (const auto& [name, module] : stage_->block_modules(b)) {
      if (users[name] > 1) materializer.materialize(*module, name);
    }
  }
  ddp.same_start = true;  // the parameters are skeletons until their unit is made
  ddp.materialize_unit = [this, &materializer](int unit) {
    for (const auto& [name, module] : stage_->block_modules(static_cast<std::size_t>(unit))) {
      materializer.materialize(*module, name, /*in_place=*/true);
    }
  };
}

// ZeRO: this rank's shard pieces of the parameters in `subset`.
std::vector<ddp::ShardPiece> Parallelism::pieces_of(const std::vector<at::Tensor>& subset) {
  std::set<const c10::TensorImpl*> wanted;
  for (const auto& p : subset) wanted.insert(p.unsafeGetTensorImpl());
  const auto params = trained().parameters();  // the order DDP numbers them in
  std::vector<ddp::ShardPiece> out;
  for (const auto& piece : ddp_->shard()) {
    if (wanted.count(params[piece.param].unsafeGetTensorImpl()) != 0) out.push_back(piece);
  }
  return out;
}

std::vector<std::pair<std::string, at::Tensor>> Parallelism::optimized() {
  std::vector<std::pair<std::string, at::Tensor>> out;
  if (sharded()) {
    for (const auto& piece : ddp_->shard()) out.emplace_back(piece.name, piece.value);
    return out;
  }
  for (const auto& p : trained().named_parameters()) out.emplace_back(p.key(), p.value());
  return out;
}

// Partitions the model's blocks, keeps this rank's stage, places it on `devices` and (pipelined)
// makes the executor, with the shapes at the stage's borders measured on the whole model first.
void Parallelism::keep_stage(const at::Tensor& sample, const std::vector<c10::Device>& devices,
                             bool skeleton) {
  const auto blocks = model_->blocks();
  COHORT_CHECK(!blocks.empty(), ConfigError, "model ", model_name_,
               " is not a sequence of blocks: it cannot be split into pipeline stages");
  const auto& partition = options_.partition;
  std::vector<std::int64_t> weights;
  for (const auto& b : blocks) weights.push_back(b.parameters());
  const auto bounds = partition.empty()
                          ? pipeline::partition_balanced(weights, layout_.stages())
                          : pipeline::partition_explicit(partition, static_cast<int>(blocks.size()),
                                                         layout_.stages());
  stage_ = std::make_shared<pipeline::Stage>(blocks, bounds, coords_.stage);
  std::function<void()> after_block;
  if (skeleton) after_block = release_skeleton_pages;
  const auto shapes = pipelined()
                          ? pipeline::block_output_shapes(blocks, *model_, sample, after_block)
                          : std::vector<std::vector<std::int64_t>>();
  stage_->place(devices);
  if (!pipelined()) return;
  pipeline::ExecutorOptions o;
  o.schedule = options_.schedule == PipelineSchedule::kGpipe ? pipeline::Schedule::kGpipe
                                                             : pipeline::Schedule::kOneFOneB;
  o.micro_batches = micro_batches_;
  o.stage = coords_.stage;
  o.stages = layout_.stages();
  if (coords_.stage > 0) o.input_shape = shapes[bounds[coords_.stage] - 1];
  o.output_shape = shapes[bounds[coords_.stage + 1] - 1];
  // Where the stage's transfers live: its placement (NCCL: the rank's GPU), else its parameters'
  // (a stage without any under NCCL would otherwise receive into CPU buffers NCCL refuses).
  const auto params = stage_->parameters();
  if (!devices.empty()) {
    o.device = devices.front();
  } else if (!params.empty()) {
    o.device = params.front().device();
  }
  if (o.device.is_cpu()) o.memory_in_use = env::heap_bytes_in_use;
  executor_ = std::make_unique<pipeline::Executor>(pipe_.get(), o);
}

// Which parameters count in the global gradient norm (each once), and which are shared copies.
void Parallelism::sort_parameters() {
  std::set<std::string> split;
  for (const auto& name : pipeline::split_parameter_names(trained())) split.insert(name);
  std::set<std::string> shared;
  if (stage_) shared.insert(stage_->shared_parameters().begin(), stage_->shared_parameters().end());
  const bool owns_shared = stage_ && !stage_->sharing_stages().empty() &&
                           stage_->sharing_stages().front() == coords_.stage;
  for (const auto& p : trained().named_parameters()) {
    if (shared.count(p.key())) shared_parameters_.push_back(p.value());
    if (shared.count(p.key()) && !owns_shared) continue;         // counted on the first stage
    if (!split.count(p.key()) && coords_.tensor != 0) continue;  // replicated: counted once
    norm_parameters_.push_back(p.value());
  }
  COHORT_CHECK(shared_parameters_.empty() || shared_ != nullptr, ConfigError,
               "pipeline: only the first and the last stage may share modules");
}

torch::nn::Module& Parallelism::trained() {
  return stage_ ? static_cast<torch::nn::Module&>(*stage_) : *model_;
}

void Parallelism::set_training(bool on) {
  trained().train(on);
  if (on) {
    for (const auto& module : held_) module->eval();
  }
}

void Parallelism::hold_in_eval(const std::vector<std::shared_ptr<torch::nn::Module>>& modules) {
  std::set<const torch::nn::Module*> kept;  // not another stage's: those are gone from this rank
  for (const auto& module : trained().modules(/*include_self=*/false)) kept.insert(module.get());
  held_.clear();
  for (const auto& module : modules) {
    if (kept.count(module.get()) != 0) held_.push_back(module);
  }
  set_training(trained().is_training());
}

// A stage moves each block's input to the block's device itself; the whole model takes its
// input where it lives (batches stay on the host, page-locked where CUDA is present).
at::Tensor Parallelism::on_model_device(const at::Tensor& t) const {
  if (device_.devices.empty() || !t.defined()) return t;
  return t.to(device_.devices.front(), /*non_blocking=*/true);
}

at::Tensor Parallelism::forward(const at::Tensor& inputs) {
  return stage_ ? stage_->forward(inputs) : model_->forward(on_model_device(inputs));
}

at::Tensor Parallelism::forward(const data::Batch& batch) {
  if (batch.fields.empty()) return forward(batch.inputs);
  COHORT_CHECK(!stage_, ConfigError,
               "a field dataset's model runs whole on one device: "
               "parallel.pipeline_stages and parallel.devices need a single-input dataset");
  std::vector<data::NamedTensor> fields = batch.fields;
  for (auto& field : fields) field.tensor = on_model_device(field.tensor);
  return model_->forward_fields(fields);
}

at::Tensor Parallelism::forward_only(const data::Batch& batch) {
  return batch.fields.empty() ? forward_only(batch.inputs) : forward(batch);
}

pipeline::StepStats Parallelism::pipeline_step(
    const data::Batch& batch, const std::function<at::Tensor(const at::Tensor&)>& forward,
    const LossFn& loss) {
  const auto inputs = batch.inputs.chunk(micro_batches_);
  const auto targets = batch.targets.chunk(micro_batches_);
  std::optional<ddp::DistributedDataParallel::NoSync> local_only;
  pipeline::StepHooks hooks;
  hooks.forward = [&](int, const at::Tensor& x) { return forward(x); };
  hooks.loss = [&](int m, const at::Tensor& out) {
    return loss(out, targets[m]) / static_cast<double>(micro_batches_);
  };
  // Gradients accumulate locally until the step's last backward, whose hooks all-reduce them.
  hooks.before_backward = [&](int, bool last) {
    if (last) {
      local_only.reset();
    } else if (!local_only) {
      local_only.emplace(*ddp_);
    }
  };
  ddp_->begin_step();
  auto stats = executor_->train_step(inputs, hooks);
  local_only.reset();
  ddp_->finish_step();
  reduce_shared_gradients();
  totals_.peak_in_flight = std::max(totals_.peak_in_flight, stats.peak_in_flight);
  totals_.peak_activation_bytes =
      std::max(totals_.peak_activation_bytes, stats.peak_activation_bytes);
  totals_.peak_memory_growth = std::max(totals_.peak_memory_growth, stats.peak_memory_growth);
  totals_.compute_s += stats.compute_s;
  totals_.wait_s += stats.wait_s;
  totals_.step_s += stats.step_s;
  ++steps_;
  return stats;
}

// The copies of a shared module (the tied embedding on the first and last stage) get their
// gradient summed, so that the same optimizer update keeps them equal.
void Parallelism::reduce_shared_gradients() {
  if (sharded()) {  // the copies' shards: the same pieces on both stages (a bucket each)
    for (const auto& piece : pieces_of(shared_parameters_)) {
      at::Tensor grad = piece.value.grad();
      shared_->all_reduce(grad);
    }
    return;
  }
  for (auto& p : shared_parameters_) {
    at::Tensor grad = p.grad();
    if (!grad.defined()) continue;
    shared_->all_reduce(grad);
  }
}

at::Tensor Parallelism::forward_only(const at::Tensor& inputs) {
  if (!pipelined()) return forward(inputs);
  return executor_->forward_only(inputs, [this](const at::Tensor& x) { return forward(x); });
}

double Parallelism::grad_norm_squared(comm::Communicator& control) {
  const auto square = [](const at::Tensor& grad) {
    return grad.defined() ? grad.to(at::kDouble).pow(2).sum().item<double>() : 0.0;
  };
  double squared = 0;
  if (sharded()) {  // each element of the data group's gradients on exactly one rank
    for (const auto& piece : pieces_of(norm_parameters_)) squared += square(piece.value.grad());
  } else {
    for (const auto& p : norm_parameters_) squared += square(p.grad());
  }
  at::Tensor total = at::zeros({1}, at::kDouble);
  total[0] = squared;
  control.all_reduce(total);
  // Replicated gradients were counted by every data-parallel replica; shards once.
  return total.item<double>() / (sharded() ? 1 : layout_.data());
}

}  // namespace cohort::train
