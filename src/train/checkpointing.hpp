// TrainCheckpoints: what `cohort train` saves and restores, through the ckpt module.
//
// The saved tensors, by name: model.<parameter or buffer>, optim.<parameter>.<state> (SGD's
// momentum_buffer; AdamW's exp_avg, exp_avg_sq and step), and trainer.position = [step, epoch,
// batch within the epoch, global batch size]; every rank holds them alike. Each rank's own state
// is its CPU random generator. Resuming with the same world size continues the loader exactly;
// with another one the loader restarts the epoch at the same global sample count (rounded down to
// a whole new global batch). Collective calls go over the checkpoint's own communicator.
//
// Asynchronous saves (checkpoint.async): at the step boundary only the model's buffers are copied
// (the next forward pass updates BatchNorm statistics); a writer thread then copies this rank's
// part of the parameters and optimizer state (1/world of them: the part it writes) to host memory
// while the next forward and backward run, and saves that snapshot while training goes on. The
// trainer calls before_update() before every optimizer step: it returns at once unless that copy
// is still running. The writer's collectives run on the checkpoint communicator, which no other
// thread uses. At most one save is in flight: the next one, finish() and the destructor wait for
// it first. A writer's error is rethrown by the next maybe_save() or by finish(); the destructor
// only waits. Synchronous saves leave the deletion of old checkpoints (retention) to that thread.
#pragma once

#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cohort/ckpt/checkpoint.hpp"
#include "cohort/comm/communicator.hpp"
#include "cohort/data/loader.hpp"
#include "cohort/models/model.hpp"
#include "cohort/pipeline/tensor_parallel.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/train/metric_watch.hpp"

namespace cohort::comm {
class MpiSession;
}

namespace cohort::train {

// What the optimizer steps when it is not the model's parameters (ZeRO's shard pieces): the
// elements [offset, offset + numel) of parameter `parameter`, of shape `shape`.
struct OptimizedPart {
  std::string parameter;
  at::Tensor value;
  std::int64_t offset = 0;
  std::vector<std::int64_t> shape;
};

struct ResumePoint {
  std::int64_t step = 0;
  data::LoaderState loader;
  std::string path;  // the checkpoint taken
};

class TrainCheckpoints {
 public:
  // Reads [checkpoint] and [optim]; `config_hash` goes into every manifest.
  TrainCheckpoints(const TrainConfig& config, std::string config_hash,
                   const comm::MpiSession& session, torch::nn::Module& model,
                   torch::optim::Optimizer& optimizer);
  ~TrainCheckpoints();

  // Collective. Cleans leftovers of interrupted saves, then loads the newest valid checkpoint
  // (checkpoint.resume); nullopt when there is none. Warnings go to `progress` on rank 0.
  std::optional<ResumePoint> resume(std::int64_t batch_size, std::FILE* progress);
  // Collective. Saves when `step` is a multiple of checkpoint.every_steps, or when `final` (the
  // end of training) and either every_steps or checkpoint.at_end asks for it.
  // Returns the committed directory, or "" when nothing was due.
  std::string maybe_save(std::int64_t step, const data::LoaderState& loader,
                         std::int64_t batch_size, bool final);
  // Collective. Saves now, synchronously, whatever checkpoint.every_steps says (a signal's
  // checkpoint); waits for a save in flight first, and only that when it was of this step.
  void save_now(std::int64_t step, const data::LoaderState& loader, std::int64_t batch_size);
  // The best checkpoints (checkpoint.best_metric): the run's metric watch, whose state goes into
  // every checkpoint as trainer.watch and comes back at resume (a checkpoint written before
  // there was one loads a fresh state).
  void set_watch(MetricWatch* watch) { watch_ = watch; }
  // Collective. Step `step` is one of the best now (`kept`, best first, is the whole list):
  // saved unless it is already, kept whatever keep_last says, and <dir>/best links to the first
  // of `kept` that is committed. Steps that left the list go back to the usual retention.
  void save_best(std::int64_t step, const data::LoaderState& loader, std::int64_t batch_size,
                 std::vector<std::int64_t> kept);
  // Waits for a save in flight; rethrows its error. Collective in effect (the writer's are).
  void finish();
  // Before anything changes the parameters or the optimizer state in place (the optimizer step):
  // waits until an asynchronous save has its snapshot.
  void before_update();
  // Called on rank 0 once a checkpoint is committed: step, directory, seconds from the start of
  // the save; on the writer's thread for an asynchronous save.
  using OnCommitted = std::function<void(std::int64_t, const std::string&, double, bool)>;
  void set_on_committed(OnCommitted f) { on_committed_ = std::move(f); }
  // Model parallelism: `data` replicas make the global batch; the parameters in `split` are this
  // rank's part `tensor_rank` of `tensor`, cut as their layouts say, and are saved as
  // "<name>.tp<r>of<t>" (their parts differ between tensor ranks) with a "layout.<name>.tp<r>of<t>"
  // each: a run with another parallel.tensor joins the parts and cuts its own
  // (ckpt/tensor_parts.hpp).
  void set_layout(int data, int tensor_rank, int tensor,
                  std::map<std::string, pipeline::SplitLayout> split);
  // Runs at the start of every save, on the training thread (the trainer: rank 0's buffers to
  // its data-parallel group, so that a replicated buffer is saved with one value).
  void set_before_save(std::function<void()> f) { before_save_ = std::move(f); }
  // ZeRO: the optimizer steps these parts; their state is saved as parts of the parameters'
  // optim.* tensors (any other layout, ZeRO or not, loads them). `values` (ZeRO 3: the module's
  // trained parameters are not whole between steps): the parts are also the parameters' values,
  // saved and loaded as parts of model.*.
  void set_optimized(std::vector<OptimizedPart> parts, bool values = false) {
    parts_ = std::move(parts);
    part_values_ = values;
  }
  // The model's parameters and buffers hold the values they were built with, and `remake` makes
  // those again in place (collective where building the model is). The next resume() then reads
  // them in place, as it does the optimizer state it creates, instead of into new memory that
  // only replaces them once the whole candidate is verified; and it calls `remake` when a
  // checkpoint was tried and none loaded. For that resume() alone: set it before any step.
  void set_initial_values(std::function<void()> remake) { remake_ = std::move(remake); }
  // True while an asynchronous save (or a retention pass) is still running.
  bool in_flight() const { return writing_.load(std::memory_order_acquire); }

 private:
  std::vector<ckpt::NamedTensor> tensors(bool create_optimizer_state, bool initial_values = false);
  void add_layouts(std::vector<ckpt::NamedTensor>& out) const;
  void add_optimizer_state(const OptimizedPart& part, bool whole, bool create,
                           std::vector<ckpt::NamedTensor>& out);
  std::string saved_name(const std::string& parameter) const;
  void check_tensor_split() const;
  void apply_retention();
  void remove_old_checkpoints();  // rank 0, under best_mutex_
  void update_best_link();        // rank 0, under best_mutex_
  void save(std::int64_t step, const data::LoaderState& loader, std::int64_t batch_size,
            bool async);
  void start_background(std::function<void()> task);

  CheckpointConfig options_;
  OptimConfig optim_;
  std::string config_hash_;
  std::string attempt_;  // "<job>-<restart>" inside Slurm, else "" (the save uses a pid)
  torch::nn::Module& model_;
  torch::optim::Optimizer& optimizer_;
  std::unique_ptr<comm::Communicator> comm_;
  ckpt::PlanCache plans_;  // the save plan, made again only when the tensors change
  std::string dir_;
  std::int64_t last_saved_ = -1;
  MetricWatch* watch_ = nullptr;
  std::mutex best_mutex_;                 // best_steps_ and the link: training and writer threads
  std::vector<std::int64_t> best_steps_;  // best first
  bool said_foreign_ = false;             // a step directory no save made: warned once
  std::vector<std::pair<torch::optim::AdamWParamState*, at::Tensor>> adamw_steps_;
  std::thread writer_;
  std::atomic<bool> writing_{false};
  std::exception_ptr writer_error_;
  std::future<void> snapshot_;  // ready once the writer holds its copy
  int nodes_ = 1;
  int node_rank_ = 0, node_size_ = 1;  // this rank's place on its node (a load's shared checks)
  int data_ = 0;                       // data-parallel replicas (0: every rank is one)
  int tensor_rank_ = 0, tensor_ = 1;
  std::map<std::string, pipeline::SplitLayout> split_;
  bool part_values_ = false;
  std::vector<OptimizedPart> parts_;  // empty: the model's trainable parameters, whole
  OnCommitted on_committed_;
  std::function<void()> before_save_;
  std::function<void()> remake_;  // set_initial_values()
};

}  // namespace cohort::train
