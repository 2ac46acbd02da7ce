// The files a training configuration reads, checked before any rank starts (`cohort train`,
// `cohort launch` ahead of its ranks, `cohort doctor`).
//
// The rule (docs/config.md, "Paths"): a relative path in a config file or a --set is relative to
// the working directory of the command, not to the file; the paths under train.run_dir
// (monitor.prom_file, monitor.tensorboard_dir) are relative to the run directory. Each error
// names the key, the path as written, the absolute path it tried and what is there ("a
// directory", "a link to ..., which does not exist"); a raw source where a dataset is expected
// (Fashion-MNIST's .gz/IDX files, an image, a .npy, a CSV or text file) names the `cohort data
// import` that makes a dataset of it.
#pragma once

#include <string>

#include "cohort/io/output.hpp"
#include "cohort/settings/config.hpp"

namespace cohort::settings {

// Throws naming the first input of `config` that cannot be what its key needs: data.path and
// data.val_path a dataset file or a directory of shards (IoError, exit 3); model.file for the
// torchscript model (ConfigError, exit 2, as the model's own check) and data.transform (IoError)
// regular files.
void check_input_paths(const TrainConfig& config);

// Every file the training reads, by its key (data.path, data.val_path, data.transform, model.file
// for the torchscript model, model.init_from), for a command's io::OutputPlan.
void add_inputs(const TrainConfig& config, io::OutputPlan& plan);

// The files and directories a training writes (train.run_dir with its config.resolved.ini and
// metrics.jsonl, monitor.prom_file, monitor.tensorboard_dir, the checkpoint directory) checked
// against its inputs and each other before any rank starts (UsageError naming the key): a
// prom_file over the run's metrics or over the dataset, a run directory that is the dataset's.
void check_training_outputs(const TrainConfig& config);

// Which `cohort data import` makes an HDF5 dataset of the file at `path`, from its first bytes
// or its name ("" when it looks like none of their sources: perhaps a dataset).
std::string import_hint(const std::string& path);

}  // namespace cohort::settings
