// Every trainer setting: section, key, type, default, help. docs/config.md is generated from it
// (`cohort train --config-reference`), and a test keeps the two equal.
#include "cohort/train/config.hpp"

namespace cohort::train {

const std::vector<std::string>& config_sections() {
  static const std::vector<std::string> sections = {
      "model", "data", "optim", "train", "parallel", "checkpoint", "monitor", "slurm", "debug"};
  return sections;
}

const std::vector<KeySpec>& config_table() {
  using K = KeyType;
  static const std::vector<KeySpec> table = {
      // [model]
      {"model", "name", K::kChoice, "mlp", "the model", "mlp|cnn|gpt"},
      {"model", "hidden", K::kIntList, "256,256", "mlp: hidden layer widths"},
      {"model", "dropout", K::kFloat, "0.0", "dropout probability (mlp, gpt)"},
      {"model", "width", K::kInt, "32", "cnn: channels of the first stage; gpt: model width"},
      {"model", "blocks", K::kInt, "2", "cnn: residual blocks per stage; gpt: transformer layers"},
      {"model", "channels_last", K::kBool, "true",
       "cnn: NHWC weights and activations (oneDNN's faster layout on CPU)"},
      {"model", "heads", K::kInt, "4", "gpt: attention heads (width must divide by it)"},
      {"model", "context", K::kInt, "128", "gpt: context length (the dataset's seq_len)"},
      // [data]
      {"data", "path", K::kString, "", "training dataset: file or shard directory (required)"},
      {"data", "val_path", K::kString, "", "validation dataset (empty: no evaluation)"},
      {"data", "batch_size", K::kInt, "64", "samples per rank per step"},
      {"data", "shuffle", K::kBool, "true", "reshuffle every epoch (torch's DistributedSampler)"},
      {"data", "prefetch", K::kInt, "2", "batches read ahead by the loader thread (0: off)"},
      {"data", "driver", K::kChoice, "posix", "HDF5 file driver", "posix|mpio"},
      {"data", "crop_padding", K::kInt, "0", "images: random-crop shift in pixels"},
      {"data", "flip", K::kBool, "false", "images: random horizontal flip"},
      // [optim]
      {"optim", "name", K::kChoice, "sgd", "optimizer", "sgd|adamw"},
      {"optim", "lr", K::kFloat, "0.1", "peak learning rate"},
      {"optim", "momentum", K::kFloat, "0.9", "sgd: momentum"},
      {"optim", "nesterov", K::kBool, "false", "sgd: Nesterov momentum"},
      {"optim", "weight_decay", K::kFloat, "0.0", "L2 (sgd) or decoupled (adamw) weight decay"},
      {"optim", "beta1", K::kFloat, "0.9", "adamw: first-moment decay"},
      {"optim", "beta2", K::kFloat, "0.999", "adamw: second-moment decay"},
      {"optim", "eps", K::kFloat, "1e-8", "adamw: denominator epsilon"},
      {"optim", "schedule", K::kChoice, "constant", "learning-rate schedule",
       "constant|step|cosine"},
      {"optim", "warmup_steps", K::kInt, "0", "linear warmup from 0 (all schedules)"},
      {"optim", "step_size", K::kInt, "1000", "step: multiply by gamma every step_size steps"},
      {"optim", "gamma", K::kFloat, "0.1", "step: decay factor"},
      {"optim", "min_lr", K::kFloat, "0.0", "cosine: final learning rate"},
      {"optim", "clip_norm", K::kFloat, "0.0", "clip gradients to this global L2 norm (0: off)"},
      {"optim", "accumulation", K::kInt, "1", "micro-batches per optimizer step (DDP no_sync)"},
      // [train]
      {"train", "epochs", K::kInt, "1", "epochs to train (max_steps may stop earlier)"},
      {"train", "max_steps", K::kInt, "0", "optimizer steps to train (0: no limit)"},
      {"train", "eval_every", K::kInt, "0", "evaluate every N steps (0: after each epoch)"},
      {"train", "log_every", K::kInt, "10", "print a progress line every N steps"},
      {"train", "seed", K::kInt, "0", "seeds the model, the sampler and augmentation"},
      {"train", "target_metric", K::kChoice, "none", "stop early when it reaches target_value",
       "none|accuracy|loss|perplexity"},
      {"train", "target_value", K::kFloat, "0.0", "early-stop threshold for target_metric"},
      {"train", "threads", K::kInt, "0",
       "torch threads per rank (0: SLURM_CPUS_PER_TASK, else cores per local rank)"},
      {"train", "precision", K::kChoice, "fp32",
       "bf16: autocast forward passes to bfloat16 (CUDA autocast on a GPU, CPU autocast here)",
       "fp32|bf16"},
      {"train", "blas_threads", K::kInt, "1",
       "OpenBLAS threads per rank (0: as train.threads; OPENBLAS_NUM_THREADS wins)"},
      {"train", "malloc_tuning", K::kBool, "true",
       "keep freed memory in the process (mallopt; COHORT_MALLOC_TUNING=0|1 wins)"},
      {"train", "run_dir", K::kString, "runs/latest", "where the resolved config and logs go"},
      // [parallel]
      {"parallel", "backend", K::kChoice, "mpi", "gradient all-reduce backend", "mpi|nccl"},
      {"parallel", "bucket_mb", K::kFloat, "25", "DDP bucket size in MiB"},
      {"parallel", "timeout_s", K::kInt, "600",
       "a collective not done after this many seconds ends the run (watchdog, exit 76)"},
      {"parallel", "overlap", K::kBool, "false",
       "all-reduce buckets during backward (pays with spare cores or a GPU)"},
      {"parallel", "pipeline_stages", K::kInt, "1",
       "pipeline stages p: the model's blocks split over p ranks (world = data x p x tensor)"},
      {"parallel", "tensor", K::kInt, "1",
       "tensor-parallel ranks t (adjacent, on one node): GPT attention heads and MLP split t ways"},
      {"parallel", "micro_batches", K::kInt, "4",
       "micro-batches per step through the pipeline (data.batch_size must divide by it)"},
      {"parallel", "schedule", K::kChoice, "1f1b",
       "pipeline schedule: 1f1b (<= p micro-batches of activations held) or gpipe (all M)",
       "1f1b|gpipe"},
      {"parallel", "partition", K::kIntList, "",
       "blocks per pipeline stage, e.g. 2,3 (empty: balanced by parameter count)"},
      {"parallel", "devices", K::kString, "",
       "place the model's blocks on several local devices of each rank, e.g. cuda:0,cuda:1"},
      // [checkpoint]
      {"checkpoint", "dir", K::kString, "",
       "checkpoint directory (empty: <train.run_dir>/checkpoints)"},
      {"checkpoint", "every_steps", K::kInt, "0",
       "save every N optimizer steps and at the end (0: never)"},
      {"checkpoint", "async", K::kBool, "true",
       "write in a background thread from a host snapshot while training goes on"},
      {"checkpoint", "keep_last", K::kInt, "3", "keep the newest N checkpoints (0: keep all)"},
      {"checkpoint", "keep_every", K::kInt, "0",
       "also keep every checkpoint whose step divides by N, forever (0: none)"},
      {"checkpoint", "resume", K::kBool, "true",
       "start from the newest valid checkpoint in checkpoint.dir when there is one"},
      {"checkpoint", "verify", K::kBool, "true", "check every slice's checksum when loading"},
      // [monitor]
      {"monitor", "enabled", K::kBool, "true",
       "per-step timing, cross-rank summaries, Prometheus file, diagnosis (off: loss records "
       "only)"},
      {"monitor", "summary_every", K::kInt, "50",
       "steps between cross-rank summaries (one small all-gather each)"},
      {"monitor", "prom_file", K::kString, "metrics.prom",
       "Prometheus textfile, relative to train.run_dir unless absolute (\"\": none)"},
      {"monitor", "grad_norm_every", K::kInt, "10",
       "gradient norm every N steps (one read of all gradients; every step when clipping; 0: "
       "never)"},
      {"monitor", "http_port", K::kInt, "-1",
       "serve /metrics on local rank 0 of each node (-1: off, 0: any free port)"},
      {"monitor", "http_bind", K::kString, "127.0.0.1", "address the /metrics endpoint binds to"},
      {"monitor", "console", K::kChoice, "auto",
       "rank 0's progress: a redrawn bar (terminal) or plain lines (log files)", "auto|bar|lines"},
      {"monitor", "peak_tflops", K::kFloat, "0",
       "peak TFLOP/s of one rank's device, for MFU (0: no MFU)"},
      {"monitor", "data_bound_fraction", K::kFloat, "0.25",
       "diagnosis: data wait share of the step that means data-bound"},
      {"monitor", "gpu_util_low", K::kFloat, "50",
       "diagnosis: GPU utilisation (percent) below which the run is data-bound"},
      {"monitor", "comm_bound_fraction", K::kFloat, "0.3",
       "diagnosis: exposed communication share (on every rank) that means comm-bound"},
      {"monitor", "straggler_margin", K::kFloat, "0.2",
       "diagnosis: a rank this much busier than the median is a straggler..."},
      {"monitor", "straggler_windows", K::kInt, "3", "...in this many summaries in a row"},
      {"monitor", "divergence_windows", K::kInt, "3",
       "diagnosis: summaries in a row with a rising loss that mean divergence..."},
      {"monitor", "divergence_rise", K::kFloat, "0.2", "...when it rose by this fraction in all"},
      // [slurm]
      {"slurm", "signals", K::kString, "USR1,TERM",
       "signals that stop the run at the next step with a checkpoint (\"\": none)"},
      {"slurm", "requeue", K::kBool, "true",
       "inside a Slurm job, requeue it through libslurm after a signal's checkpoint"},
      {"slurm", "time_margin", K::kInt, "300",
       "inside a Slurm job with a time limit: stop (checkpoint, requeue) this many seconds before "
       "it (0: off)"},
      {"slurm", "max_restarts", K::kInt, "3",
       "requeue only while SLURM_RESTART_COUNT is below this; then end with a message"},
      {"slurm", "max_excluded_nodes", K::kInt, "2",
       "after a failed step, keep the requeued job off failed nodes, up to this many (0: never)"},
      {"slurm", "node_failure_wait", K::kInt, "30",
       "after a failed step, wait up to this many seconds for the controller to flag a lost node"},
      // [debug]: test hooks
      {"debug", "data_delay_ms", K::kInt, "0",
       "test hook: every batch read takes this much longer (a slow filesystem)"},
      {"debug", "slow_rank", K::kInt, "-1", "test hook: this rank computes slower..."},
      {"debug", "slow_ms", K::kInt, "0", "...by this many milliseconds per step"},
  };
  return table;
}

}  // namespace cohort::train
