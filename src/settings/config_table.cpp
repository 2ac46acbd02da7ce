// Every trainer setting: section, key (its field), type, default, help, range. docs/config.md is
// generated from it (`cohort config reference`), and a test keeps the two equal.
#include "cohort/settings/config.hpp"

#include <iterator>
#include <vector>

#include "settings/config_fields.hpp"

namespace cohort::settings {

const std::vector<std::string>& config_sections() {
  static const std::vector<std::string> sections = {
      "model", "data", "optim", "train", "parallel", "checkpoint", "monitor", "slurm", "debug"};
  return sections;
}

namespace {

using K = KeyType;

// [model]
std::vector<KeySpec> model_keys() {
  return {
      {COHORT_KEY(model, name), K::kString, "mlp",
       "the model: a built-in one, or one that a library of model.library registers",
       kBuiltinModels},
      {COHORT_KEY(model, library), K::kString, "",
       "shared libraries of C++ models, comma-separated (--plugin; docs/models.md, \"C++ "
       "models\")"},
      {COHORT_KEY(model, hidden), K::kIntList, "256,256", "mlp: hidden layer widths", "", 1,
       1048576},
      {COHORT_KEY(model, dropout), K::kFloat, "0.0", "dropout probability (mlp, gpt)", "", 0, 1},
      {COHORT_KEY(model, width), K::kInt, "32",
       "cnn: channels of the first stage; gpt: model width", "", 1, 1048576},
      {COHORT_KEY(model, blocks), K::kInt, "2",
       "cnn: residual blocks per stage; gpt: transformer layers", "", 1, 4096},
      {COHORT_KEY(model, channels_last), K::kBool, "true",
       "cnn: NHWC weights and activations (oneDNN's faster layout on CPU)"},
      {COHORT_KEY(model, heads), K::kInt, "4", "gpt: attention heads (width must divide by it)", "",
       1, 4096},
      {COHORT_KEY(model, context), K::kInt, "128", "gpt: context length (the dataset's seq_len)",
       "", 1, 1048576},
      {COHORT_KEY(model, file), K::kString, "",
       "torchscript: the module saved from Python (torch.jit.script or trace; docs/models.md)"},
      {COHORT_KEY(model, flops_per_sample), K::kFloat, "0",
       "torchscript: forward + backward FLOPs of one sample, for the monitor (0: unknown)", "", 0,
       kNoLimit},
      {COHORT_KEY(model, jit_optimize), K::kBool, "false",
       "torchscript: let LibTorch's graph executor profile and optimize the module "
       "(docs/models.md)"},
      {COHORT_KEY(model, init_from), K::kString, "",
       "start from these weights: a torch.save state_dict, a Cohort export (.pt, .h5) or "
       "checkpoint directory (docs/models.md)"},
      {COHORT_KEY(model, init_strict), K::kBool, "true",
       "init_from must hold every model tensor with its shape, and no other"},
      {COHORT_KEY(model, init_prefix_map), K::kString, "",
       "init_from names: FROM:TO,... renames the file's prefix FROM to the model's TO"},
      {COHORT_KEY(model, init_skip), K::kString, "",
       "a regex (RE2): model tensors whose names it matches are not loaded from init_from (a "
       "new head), and the file's tensors of those names are dropped"},
      {COHORT_KEY(model, recompute), K::kString, "none",
       "activation recompute: blocks (keep each block's input only, compute the rest again in "
       "backward), every:K (segments of K blocks), none"},
  };
}

// [model], continued: how the model is built, initialised and frozen
std::vector<KeySpec> model_build_keys() {
  return {
      {COHORT_KEY(model, materialize), K::kChoice, "whole",
       "own: each rank builds only its part of the model (its stage, tensor part, ZeRO-3 "
       "shard), initialised by a generator per module seeded by train.seed and the module's "
       "name, equal in every layout; whole: every rank builds the whole model from one "
       "generator (mlp, cnn and gpt have both)",
       "whole|own"},
      {COHORT_KEY(model, max_build_gib), K::kFloat, "0",
       "GiB of memory building the model may hold (materialize = own: its largest tensor), "
       "refused before it is allocated: sizes a dataset claims (vocab_size, classes, seq_len) "
       "decide it (0: the memory this process may use, the least of the host's, its cgroup's "
       "and its address space limit, shared by the node's ranks)",
       "", 0, kNoLimit},
      {COHORT_KEY(model, freeze), K::kString, "",
       "a regex (RE2): parameters whose names it matches are not trained (not in DDP, not in "
       "the optimizer)"},
      {COHORT_KEY(model, freeze_statistics), K::kBool, "true",
       "model.freeze: a module left without a trainable parameter keeps its running statistics "
       "(BatchNorm's running_mean/var: in eval mode while training); false lets them move"},
  };
}

// [data]
std::vector<KeySpec> data_keys() {
  return {
      {COHORT_KEY(data, path), K::kString, "",
       "training dataset: file or shard directory (required)"},
      {COHORT_KEY(data, val_path), K::kString, "", "validation dataset (empty: no evaluation)"},
      {COHORT_KEY(data, batch_size), K::kInt, "64", "samples per rank per step", "", 1, 16777216},
      {COHORT_KEY(data, shuffle), K::kBool, "true",
       "reshuffle every epoch (torch's DistributedSampler)"},
      {COHORT_KEY(data, prefetch), K::kInt, "2", "batches read ahead by the loader thread (0: off)",
       "", 0, 64},
      {COHORT_KEY(data, workers), K::kInt, "1",
       "threads reading and converting batches in parallel, in order (1 with mpio)", "", 1, 64},
      {COHORT_KEY(data, caller_reads), K::kBool, "true",
       "the training thread reads a batch itself rather than wait for one (not with mpio)"},
      {COHORT_KEY(data, transform), K::kString, "",
       "a TorchScript module applied to each batch's inputs (docs/data.md)"},
      {COHORT_KEY(data, driver), K::kChoice, "posix", "HDF5 file driver", "posix|mpio"},
      {COHORT_KEY(data, crop_padding), K::kInt, "0", "images: random-crop shift in pixels", "", 0,
       4096},
      {COHORT_KEY(data, flip), K::kBool, "false", "images: random horizontal flip"},
      {COHORT_KEY(data, max_length), K::kInt, "0",
       "ragged fields: cut longer samples to this many values (0: never)", "", 0, kNoLimit},
      {COHORT_KEY(data, bucket), K::kInt, "0",
       "ragged fields: sort windows of this many batches by length (0: off)", "", 0, 65536},
      {COHORT_KEY(data, target), K::kString, "",
       "field datasets with several targets: the one the loss uses (empty: the first)"},
  };
}

// [optim]
std::vector<KeySpec> optim_keys() {
  return {
      {COHORT_KEY(optim, name), K::kChoice, "sgd", "optimizer", "sgd|adamw"},
      {COHORT_KEY(optim, lr), K::kFloat, "0.1", "peak learning rate", "", 0, kNoLimit},
      {COHORT_KEY(optim, momentum), K::kFloat, "0.9", "sgd: momentum", "", 0, 1},
      {COHORT_KEY(optim, nesterov), K::kBool, "false", "sgd: Nesterov momentum"},
      {COHORT_KEY(optim, weight_decay), K::kFloat, "0.0",
       "L2 (sgd) or decoupled (adamw) weight decay", "", 0, kNoLimit},
      {COHORT_KEY(optim, beta1), K::kFloat, "0.9", "adamw: first-moment decay", "", 0, 1},
      {COHORT_KEY(optim, beta2), K::kFloat, "0.999", "adamw: second-moment decay", "", 0, 1},
      {COHORT_KEY(optim, eps), K::kFloat, "1e-8", "adamw: denominator epsilon", "", 1e-30, 1},
      {COHORT_KEY(optim, schedule), K::kChoice, "constant", "learning-rate schedule",
       "constant|step|cosine"},
      {COHORT_KEY(optim, warmup_steps), K::kInt, "0", "linear warmup from 0 (all schedules)", "", 0,
       kNoLimit},
      {COHORT_KEY(optim, step_size), K::kInt, "1000",
       "step: multiply by gamma every step_size steps", "", 1, kNoLimit},
      {COHORT_KEY(optim, gamma), K::kFloat, "0.1", "step: decay factor", "", 0, kNoLimit},
      {COHORT_KEY(optim, min_lr), K::kFloat, "0.0", "cosine: final learning rate", "", 0, kNoLimit},
      {COHORT_KEY(optim, clip_norm), K::kFloat, "0.0",
       "clip gradients to this global L2 norm (0: off)", "", 0, kNoLimit},
      {COHORT_KEY(optim, accumulation), K::kInt, "1",
       "micro-batches per optimizer step (DDP no_sync)", "", 1, 1048576},
      {COHORT_KEY(optim, lr_scale), K::kString, "",
       "REGEX:FACTOR,...: a parameter's learning rate times the factor of the first regex (RE2) "
       "that matches its name"},
  };
}

// [train]
std::vector<KeySpec> train_keys() {
  return {
      {COHORT_KEY(train, epochs), K::kInt, "1", "epochs to train (max_steps may stop earlier)", "",
       1, 1073741824},
      {COHORT_KEY(train, max_steps), K::kInt, "0", "optimizer steps to train (0: no limit)", "", 0,
       kNoLimit},
      {COHORT_KEY(train, eval_every), K::kInt, "0", "evaluate every N steps (0: after each epoch)",
       "", 0, kNoLimit},
      {COHORT_KEY(train, log_every), K::kInt, "10", "print a progress line every N steps", "", 0,
       kNoLimit},
      {COHORT_KEY(train, seed), K::kInt, "0", "seeds the model, the sampler and augmentation"},
      {COHORT_KEY(train, target_metric), K::kChoice, "none",
       "stop early when it reaches target_value (loss, perplexity, mae: at or below)",
       "none|accuracy|loss|perplexity|mae|r2|micro_f1"},
      {COHORT_KEY(train, task), K::kChoice, "auto",
       "what the targets are; auto: language_model for token sets, classification for integer "
       "labels, regression for float targets (docs/models.md)",
       "auto|classification|regression|multilabel|language_model"},
      {COHORT_KEY(train, loss), K::kChoice, "auto",
       "auto: cross_entropy (classification, language_model), mse (regression), bce "
       "(multilabel, with logits)",
       "auto|cross_entropy|mse|l1|huber|bce"},
      {COHORT_KEY(train, label_smoothing), K::kFloat, "0.0", "cross_entropy: label smoothing", "",
       0, 1},
      {COHORT_KEY(train, class_weights), K::kFloatList, "",
       "cross_entropy: one weight per class (empty: equal)", "", 0, kNoLimit},
      {COHORT_KEY(train, huber_delta), K::kFloat, "1.0",
       "huber: where the loss turns from squared to linear", "", 1e-12, kNoLimit},
      {COHORT_KEY(train, top_k), K::kInt, "5",
       "classification: also report top-k accuracy (with more than k classes)", "", 1, 1048576},
      {COHORT_KEY(train, target_value), K::kFloat, "0.0", "early-stop threshold for target_metric"},
      {COHORT_KEY(train, early_stop_patience), K::kInt, "0",
       "stop after N evaluations in a row without improvement of early_stop_metric (0: never)", "",
       0, kNoLimit},
      {COHORT_KEY(train, early_stop_metric), K::kChoice, "none",
       "the validation metric early stopping watches (none: checkpoint.best_metric; accuracy, "
       "r2, micro_f1: higher is better)",
       "none|accuracy|loss|perplexity|mae|r2|micro_f1"},
      {COHORT_KEY(train, early_stop_min_delta), K::kFloat, "0.0",
       "an improvement is a change by more than this", "", 0, kNoLimit},
      {COHORT_KEY(train, threads), K::kInt, "0",
       "torch threads per rank (0: SLURM_CPUS_PER_TASK, else cores per local rank)", "", 0, 4096},
  };
}

// [train], continued: precision and what follows
std::vector<KeySpec> train_precision_keys() {
  return {
      {COHORT_KEY(train, precision), K::kChoice, "fp32",
       "bf16: autocast forward passes to bfloat16 (CUDA autocast on a GPU, CPU autocast here)",
       "fp32|bf16"},
      {COHORT_KEY(train, blas_threads), K::kInt, "1",
       "OpenBLAS threads per rank (0: as train.threads; OPENBLAS_NUM_THREADS wins)", "", 0, 4096},
      {COHORT_KEY(train, malloc_tuning), K::kBool, "true",
       "keep freed memory in the process (mallopt; COHORT_MALLOC_TUNING=0|1 wins)"},
      {COHORT_KEY(train, run_dir), K::kString, "runs/latest",
       "where the resolved config and logs go"},
  };
}

// [parallel]
std::vector<KeySpec> parallel_keys() {
  return {
      {COHORT_KEY(parallel, backend), K::kChoice, "mpi", "gradient all-reduce backend", "mpi|nccl"},
      {COHORT_KEY(parallel, bucket_mb), K::kFloat, "25", "DDP bucket size in MiB", "", 0.001,
       65536},
      {COHORT_KEY(parallel, timeout_s), K::kInt, "600",
       "a collective (MPI start-up included) not done after this many seconds ends the run "
       "(watchdog, exit 76)",
       "", 1, 1073741824},
      {COHORT_KEY(parallel, overlap), K::kBool, "false",
       "all-reduce buckets during backward (pays with spare cores or a GPU)"},
      {COHORT_KEY(parallel, zero), K::kInt, "0",
       "ZeRO over the data-parallel group: 1 shards the optimizer state, 2 also the gradients, "
       "3 also the parameters, gathered block by block (0: every rank holds all)",
       "", 0, 3},
      {COHORT_KEY(parallel, pipeline_stages), K::kInt, "1",
       "pipeline stages p: the model's blocks split over p ranks (world = data x p x tensor)", "",
       1, 65536},
      {COHORT_KEY(parallel, tensor), K::kInt, "1",
       "tensor-parallel ranks t (adjacent, on one node): GPT attention heads and MLP split t ways",
       "", 1, 65536},
      {COHORT_KEY(parallel, micro_batches), K::kInt, "4",
       "micro-batches per step through the pipeline (data.batch_size must divide by it)", "", 1,
       1048576},
      {COHORT_KEY(parallel, schedule), K::kChoice, "1f1b",
       "pipeline schedule: 1f1b (<= p micro-batches of activations held) or gpipe (all M)",
       "1f1b|gpipe"},
      {COHORT_KEY(parallel, partition), K::kIntList, "",
       "blocks per pipeline stage, e.g. 2,3 (empty: balanced by parameter count)", "", 1, 1048576},
      {COHORT_KEY(parallel, devices), K::kString, "",
       "place the model's blocks on local devices of each rank, e.g. cuda:0,cuda:1 (nccl: the "
       "rank's own GPU alone)"},
  };
}

// [checkpoint]
std::vector<KeySpec> checkpoint_keys() {
  return {
      {COHORT_KEY(checkpoint, dir), K::kString, "",
       "checkpoint directory (empty: <train.run_dir>/checkpoints)"},
      {COHORT_KEY(checkpoint, every_steps), K::kInt, "0",
       "save every N optimizer steps (0: only at the end and at a stop signal)", "", 0, kNoLimit},
      {COHORT_KEY(checkpoint, at_end), K::kBool, "true",
       "save when training ends, whatever every_steps says (what predict, export and a longer "
       "run start from)"},
      {COHORT_KEY(checkpoint, best_metric), K::kChoice, "none",
       "keep the checkpoints of the best_keep best evaluations by this validation metric, "
       "apart from keep_last (RUN/checkpoints/best: the best one)",
       "none|accuracy|loss|perplexity|mae|r2|micro_f1"},
      {COHORT_KEY(checkpoint, best_keep), K::kInt, "1", "how many best checkpoints to keep", "", 1,
       32},
      {COHORT_KEY(checkpoint, async), K::kBool, "true",
       "write in a background thread from a host snapshot while training goes on"},
      {COHORT_KEY(checkpoint, keep_last), K::kInt, "3",
       "keep the newest N checkpoints (0: keep all)", "", 0, kNoLimit},
      {COHORT_KEY(checkpoint, keep_every), K::kInt, "0",
       "also keep every checkpoint whose step divides by N, forever (0: none)", "", 0, kNoLimit},
      {COHORT_KEY(checkpoint, resume), K::kBool, "true",
       "start from the newest valid checkpoint in checkpoint.dir when there is one"},
      {COHORT_KEY(checkpoint, verify), K::kBool, "true",
       "check every slice's checksum when loading (on every node; ranks that load the same "
       "tensors share a node's checks)"},
  };
}

// [monitor]
std::vector<KeySpec> monitor_keys() {
  return {
      {COHORT_KEY(monitor, enabled), K::kBool, "true",
       "per-step timing, cross-rank summaries, Prometheus file, diagnosis (off: loss records "
       "only)"},
      {COHORT_KEY(monitor, summary_every), K::kInt, "50",
       "steps between cross-rank summaries (one small gather to rank 0 each)", "", 1, kNoLimit},
      {COHORT_KEY(monitor, prom_file), K::kString, "metrics.prom",
       "Prometheus textfile, relative to train.run_dir unless absolute (\"\": none)"},
      {COHORT_KEY(monitor, tensorboard_dir), K::kString, "",
       "TensorBoard event files (rank 0), relative to train.run_dir unless absolute (\"\": none)"},
      {COHORT_KEY(monitor, grad_norm_every), K::kInt, "10",
       "gradient norm every N steps (one read of all gradients; every step when clipping; 0: "
       "never)",
       "", 0, kNoLimit},
      {COHORT_KEY(monitor, http_port), K::kInt, "-1",
       "serve /metrics on local rank 0 of each node (-1: off, 0: any free port)", "", -1, 65535},
      {COHORT_KEY(monitor, http_bind), K::kString, "127.0.0.1",
       "address the /metrics endpoint binds to"},
      {COHORT_KEY(monitor, console), K::kChoice, "auto",
       "rank 0's progress: a redrawn bar (terminal) or plain lines (log files)", "auto|bar|lines"},
      {COHORT_KEY(monitor, peak_tflops), K::kFloat, "0",
       "peak TFLOP/s of one rank's device, for MFU (0: no MFU)", "", 0, kNoLimit},
      {COHORT_KEY(monitor, data_bound_fraction), K::kFloat, "0.25",
       "diagnosis: data wait share of the step that means data-bound", "", 0, 1},
      {COHORT_KEY(monitor, gpu_util_low), K::kFloat, "50",
       "diagnosis: GPU utilisation (percent) below which the run is data-bound", "", 0, 100},
      {COHORT_KEY(monitor, comm_bound_fraction), K::kFloat, "0.3",
       "diagnosis: exposed communication share (on every rank) that means comm-bound", "", 0, 1},
      {COHORT_KEY(monitor, cpu_contention), K::kFloat, "1.5",
       "diagnosis: host load per core from which the run's timings are the host's "
       "(cpu-contention, checked first)",
       "", 0, kNoLimit},
      {COHORT_KEY(monitor, straggler_margin), K::kFloat, "0.2",
       "diagnosis: a rank this much busier than the median is a straggler...", "", 0, kNoLimit},
      {COHORT_KEY(monitor, straggler_windows), K::kInt, "3", "...in this many summaries in a row",
       "", 1, kNoLimit},
      {COHORT_KEY(monitor, divergence_windows), K::kInt, "3",
       "diagnosis: summaries in a row with a rising loss that mean divergence...", "", 1, kNoLimit},
      {COHORT_KEY(monitor, divergence_rise), K::kFloat, "0.2",
       "...when it rose by this fraction in all", "", 0, kNoLimit},
  };
}

// [slurm]
std::vector<KeySpec> slurm_keys() {
  return {
      {COHORT_KEY(slurm, signals), K::kString, "USR1,TERM",
       "signals that stop the run at the next step with a checkpoint (\"\": none)"},
      {COHORT_KEY(slurm, requeue), K::kBool, "true",
       "inside a Slurm job, requeue it through libslurm after a signal's checkpoint"},
      {COHORT_KEY(slurm, time_margin), K::kInt, "300",
       "inside a Slurm job with a time limit: stop (checkpoint, requeue) this many seconds before "
       "it (0: off)",
       "", 0, kNoLimit},
      {COHORT_KEY(slurm, max_restarts), K::kInt, "-1",
       "requeue only while SLURM_RESTART_COUNT (all causes) is below this (-1: no limit)", "", -1,
       kNoLimit},
      {COHORT_KEY(slurm, max_preemptions), K::kInt, "-1",
       "requeues after a signal or the time limit, per job (-1: no limit)", "", -1, kNoLimit},
      {COHORT_KEY(slurm, max_failures), K::kInt, "3",
       "requeues after a lost rank or node, a hang or a device fault, per job (-1: no limit)", "",
       -1, kNoLimit},
      {COHORT_KEY(slurm, max_preflight_requeues), K::kInt, "2",
       "requeues after a node failed the pre-flight checks, per job (-1: no limit)", "", -1,
       kNoLimit},
      {COHORT_KEY(slurm, preflight), K::kBool, "false",
       "cohort supervise: run `cohort doctor` on every node before training; exclude a failing "
       "node and requeue (on in the shipped job scripts)"},
      {COHORT_KEY(slurm, preflight_bandwidth), K::kFloat, "50",
       "pre-flight: MPI loopback and all-reduce bus bandwidth (MB/s) below which the network "
       "check fails",
       "", 0, kNoLimit},
      {COHORT_KEY(slurm, preflight_timeout), K::kInt, "300",
       "pre-flight: seconds `cohort doctor` may take before training starts without it", "", 1,
       86400},
      {COHORT_KEY(slurm, max_excluded_nodes), K::kInt, "2",
       "after a failed step, keep the requeued job off failed nodes, up to this many (0: never)",
       "", 0, kNoLimit},
      {COHORT_KEY(slurm, node_failure_wait), K::kInt, "30",
       "after a failed step, wait up to this many seconds for the controller to flag a lost node",
       "", 0, 1048576},
      {COHORT_KEY(slurm, spare_nodes), K::kInt, "0",
       "cohort supervise: this many of the job's nodes are hot spares (submit N+K nodes): a "
       "failed step restarts at once in the job, a spare for each lost node, without a requeue",
       "", 0, 1024},
  };
}

// [debug]: test hooks
std::vector<KeySpec> debug_keys() {
  return {
      {COHORT_KEY(debug, data_delay_ms), K::kInt, "0",
       "test hook: every batch read takes this much longer (a slow filesystem)", "", 0, 1048576},
      {COHORT_KEY(debug, slow_rank), K::kInt, "-1", "test hook: this rank computes slower...", "",
       -1, kNoLimit},
      {COHORT_KEY(debug, slow_ms), K::kInt, "0", "...by this many milliseconds per step", "", 0,
       1048576},
      {COHORT_KEY(debug, device_fault_step), K::kInt, "0",
       "test hook: at this step (0: never) debug.device_fault_rank fails as a CUDA error would "
       "(exit 78, its node reported faulty)",
       "", 0, kNoLimit},
      {COHORT_KEY(debug, device_fault_rank), K::kInt, "0", "...this rank", "", 0, kNoLimit},
      {COHORT_KEY(debug, doctor_fault), K::kString, "",
       "test hook: NODE:CHECK makes that pre-flight check fail on that node (cohort doctor)"},
      {COHORT_KEY(debug, start_delay_rank), K::kInt, "-1",
       "test hook: this rank of `cohort train` starts MPI late (a peer that does not join)...", "",
       -1, kNoLimit},
      {COHORT_KEY(debug, start_delay_s), K::kInt, "0", "...by this many seconds", "", 0, 1048576},
  };
}

}  // namespace

const std::vector<KeySpec>& config_table() {
  // Concatenated in this order, which is the order of a resolved config's keys and so part of its
  // hash (Config::hash(), which checkpoints record): a key moves only with a reason.
  static const std::vector<KeySpec> table = [] {
    std::vector<KeySpec> all;
    for (const auto& part :
         {model_keys, model_build_keys, data_keys, optim_keys, train_keys, train_precision_keys,
          parallel_keys, checkpoint_keys, monitor_keys, slurm_keys, debug_keys}) {
      auto keys = part();
      all.insert(all.end(), std::make_move_iterator(keys.begin()),
                 std::make_move_iterator(keys.end()));
    }
    return all;
  }();
  return table;
}

}  // namespace cohort::settings
