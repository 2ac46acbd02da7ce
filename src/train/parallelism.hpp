// Parallelism: this rank's share of the model and the groups that train it, for
// world = data x pipeline x tensor (env::ParallelLayout).
//
// Protocol. Collective construction over the world: the gradient communicator is split into the
// rank's data-parallel, pipeline and tensor groups (only the ones with more than one rank; with
// neither pipeline nor tensor parallelism the data group is the world communicator itself), plus,
// when the first and last stages share a module (GPT's tied token embedding), a group of those
// two stages. attach() then takes the model, built whole on every rank with the same seed (and
// its tensor-parallel layers already split over tensor_group()), and keeps this rank's stage of
// it; the other stages' blocks are freed (the whole model exists only while it is split). With
// model.materialize = own the model it takes is a skeleton without memory, and only what the
// rank keeps gets values (materialize.hpp).
// Without pipeline stages the trainer runs its own accumulation loop around ddp(); with them,
// pipeline_step() runs one step's forwards and backwards through the executor's schedule, leaving
// gradients averaged over the data group (DDP synchronises during the step's last backward) and
// summed over the shared copies. The loss a rank reports counts only where it is computed once
// (last stage, tensor index 0): scores().
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cohort/comm/communicator.hpp"
#include "cohort/comm/mpi_session.hpp"
#include "cohort/data/reader.hpp"
#include "cohort/ddp/distributed_data_parallel.hpp"
#include "cohort/env/parallel_layout.hpp"
#include "cohort/models/model.hpp"
#include "cohort/pipeline/executor.hpp"
#include "cohort/pipeline/stage.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/train/rank_device.hpp"
#include "models/materialize.hpp"

namespace cohort::train {

using LossFn = std::function<at::Tensor(const at::Tensor& logits, const at::Tensor& targets)>;

// The rank's device (choose_rank_device over this process's GPU binding, by its node rank and
// size), its GPU made current with the NCCL backend (comm::set_rank_device): before any
// communicator or thread is made, since NCCL builds a communicator on the device current then.
// With NCCL a refusal is kept in `refused`, not thrown, for agree_rank_devices().
RankDevice start_rank_device(const ParallelConfig& options, const comm::MpiSession& session,
                             std::exception_ptr& refused);
// Collective over `control`: when any rank refused its device, every rank throws (that rank its
// own error, the others one naming the lowest such rank), so that none waits alone in the NCCL
// communicator's collective start.
void agree_rank_devices(comm::Communicator& control, const std::exception_ptr& refused);

class Parallelism {
 public:
  // `model_name` names the model in errors; `device`: where the model goes
  // (start_rank_device). Collective.
  Parallelism(const ParallelConfig& options, RankDevice device, std::string model_name,
              comm::Communicator& world, int ranks_per_node);
  ~Parallelism();

  const env::ParallelLayout& layout() const { return layout_; }
  const env::ParallelCoords& coords() const { return coords_; }
  comm::Communicator& data_group() { return data_ ? *data_ : world_; }
  comm::Communicator* tensor_group() { return tensor_.get(); }
  bool pipelined() const { return layout_.stages() > 1; }
  bool scores() const;  // this rank computes the loss that counts: last stage, tensor index 0

  // Every tensor group's ranks run on one host (the rank count per node alone does not show a
  // cyclic rank placement). ConfigError naming the group otherwise. Collective over `control`.
  void check_tensor_groups(comm::Communicator& control) const;

  // Takes the whole model, keeps this rank's stage (when pipelined, placed on devices or
  // recomputed) on the rank's device(s), wraps it in DDP over the data group. `sample` is one input
  // sample for shape inference; `recompute`: blocks per recomputed segment (model.recompute; 0:
  // none). `materializer` (model.materialize = own; nullptr: whole): the model is a skeleton, and
  // only the modules this rank keeps are given values (under ZeRO 3 a block at a time, as DDP
  // shards it), so that no rank holds the whole model.
  void attach(std::shared_ptr<Model> model, const at::Tensor& sample, ddp::DdpOptions ddp,
              int recompute = 0, Materializer* materializer = nullptr);
  torch::nn::Module& trained();  // what the optimizer and checkpoints see
  // Train or eval mode of the trained module, with the modules of hold_in_eval() kept in eval
  // mode when it trains: every switch of a run goes through here (model.freeze_statistics).
  void set_training(bool on);
  // Of `modules`, those this rank trains (its stage's) stay in eval mode from now on.
  void hold_in_eval(const std::vector<std::shared_ptr<torch::nn::Module>>& modules);
  // The model as attach() took it, when this rank trains it so (no stage kept: not pipelined,
  // placed on devices, recomputed or under ZeRO 3); nullptr otherwise.
  Model* whole_model() { return stage_ ? nullptr : model_.get(); }
  at::Tensor forward(const at::Tensor& inputs);  // the trained module
  // A batch: forward() of its inputs, or the model's forward_fields() for a field dataset (whose
  // model runs whole on one device: ConfigError at attach() otherwise).
  at::Tensor forward(const data::Batch& batch);
  ddp::DistributedDataParallel& ddp() { return *ddp_; }
  // What the optimizer steps, by parameter name: the trained module's parameters, or with ZeRO
  // (parallel.zero) this rank's shard pieces (ddp().shard()).
  bool sharded() const { return zero().any(); }
  // The ZeRO stage this run trains under (parallel.zero): the trainer asks here, not the config.
  settings::ZeroSharding zero() const { return settings::zero_sharding(options_); }
  std::vector<std::pair<std::string, at::Tensor>> optimized();

  // Pipelined: one step over `batch`, split into parallel.micro_batches; `forward` runs the
  // stage (the caller adds autocast), `loss` maps logits and targets to a mean loss. Returns the
  // executor's figures; stats.loss is the step's loss where scores(). Collective.
  pipeline::StepStats pipeline_step(const data::Batch& batch,
                                    const std::function<at::Tensor(const at::Tensor&)>& forward,
                                    const LossFn& loss);
  // Evaluation's forward: the logits on the last stage, an undefined tensor elsewhere.
  at::Tensor forward_only(const at::Tensor& inputs);
  at::Tensor forward_only(const data::Batch& batch);

  // Pipelined: one record of the run's schedule figures from every rank (peak micro-batches and
  // bytes of activations held, busy share of step time) and the checksum of each rank's copy of
  // the shared parameters (the tied embedding; with ZeRO its pieces), which must be equal on the
  // first and last stage of a data-parallel replica; gathered over `control` (collective);
  // rank 0 gets the record, the others an empty object. (src/train/pipeline_report.cpp)
  nlohmann::json pipeline_report(comm::Communicator& control);

  // The global squared L2 norm of the gradients, over every stage and tensor part, each
  // parameter counted once (with ZeRO each rank sums its shard pieces); collective over
  // `control` (the world).
  double grad_norm_squared(comm::Communicator& control);

 private:
  void build_groups();
  // `skeleton`: the model has no values yet (model.materialize = own).
  void keep_stage(const at::Tensor& sample, const std::vector<c10::Device>& devices, bool skeleton);
  void sort_parameters();
  void materialize_kept(Materializer& materializer, ddp::DdpOptions& ddp);
  void reduce_shared_gradients();
  // XXH3-64 of the values of this rank's shared copies, in order; 0 where it holds none.
  std::uint64_t shared_copies_hash();
  at::Tensor on_model_device(const at::Tensor& t) const;
  std::vector<ddp::ShardPiece> pieces_of(const std::vector<at::Tensor>& subset);

  ParallelConfig options_;
  RankDevice device_;
  std::string model_name_;
  comm::Communicator& world_;
  env::ParallelLayout layout_;
  env::ParallelCoords coords_;
  std::unique_ptr<comm::Communicator> data_, pipe_, tensor_, shared_;
  std::shared_ptr<Model> model_;
  std::vector<std::shared_ptr<torch::nn::Module>> held_;  // hold_in_eval's, this rank's only
  std::shared_ptr<pipeline::Stage> stage_;
  std::unique_ptr<ddp::DistributedDataParallel> ddp_;
  std::unique_ptr<pipeline::Executor> executor_;
  std::vector<at::Tensor> norm_parameters_;    // each counted once in the global norm
  std::vector<at::Tensor> shared_parameters_;  // copies held by several stages
  int micro_batches_ = 1;
  pipeline::StepStats totals_;  // over the run: peaks are maxima, times are sums
  std::int64_t steps_ = 0;
};

}  // namespace cohort::train
