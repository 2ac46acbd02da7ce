// The module a TorchScript run (model.name = torchscript) trains stays the one it started with.
// Its checkpoint directory keeps a copy, module.pt, written atomically by rank 0 at a start that
// finds no checkpoint there; a start that finds checkpoints (a resume, a requeue) compares
// model.file with that copy byte for byte (XXH3) and refuses another module in one line, since
// the checkpoints hold that module's tensors. `cohort ckpt export --torchscript` without a file
// writes into this copy.
#pragma once

#include <string>

namespace cohort::train {

struct Config;

// Does nothing for the built-in models.
void keep_run_module(const Config& config, int rank);

}  // namespace cohort::train
