// The module a TorchScript run (model.name = torchscript) trains stays the one it started with.
// Its checkpoint directory keeps a copy, module.pt, written atomically by rank 0 at a start that
// finds no checkpoint there; a start that finds checkpoints (a resume, a requeue) compares
// model.file with that copy and refuses another module in one line naming the first difference,
// since the checkpoints hold that module's tensors. Equal bytes (XXH3) are the same module; other
// bytes may be too (scripting the same Python again orders a class's constants anew, and a
// file's archive folder is named after the file): then what the run depends on is compared,
// module_signature(). `cohort ckpt export --torchscript` without a file
// writes into this copy.
#pragma once

#include <string>
#include <vector>

namespace cohort::settings {
class Config;
}  // namespace cohort::settings

namespace cohort::train {

using settings::Config;

// Does nothing for the built-in models.
void keep_run_module(const Config& config, int rank);

// What a TorchScript file's training depends on, one line each: every module's class (mangled
// names as the class scripted once), each method's graph without source locations (its code,
// constants inlined), every parameter's and buffer's name, shape, dtype and whether it trains.
// Not the values: the checkpoints hold those.
std::vector<std::string> module_signature(const std::string& path, const std::string& key);

}  // namespace cohort::train
