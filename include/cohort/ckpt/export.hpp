// Exporting a sharded checkpoint to one consolidated file, for tools outside Cohort
// (docs/formats/checkpoint.md, "Export"):
//  - kTorch (.pt/.pth): a dict of name -> tensor written by LibTorch's torch::jit::pickle_save
//  (torch::pickle_save), the
//    zip format that Python's torch.load reads; every tensor keeps its dtype and shape;
//  - kHdf5 (.h5/.hdf5): one dataset per tensor at the root, named by the tensor, with its global
//    shape; bfloat16 is widened to float32 (exactly) and bool stored as uint8, the original type in
//    the dataset's `dtype` attribute; the root's attributes say where it came from.
// With ExportOptions::torchscript, the output is that module with the trained weights.
// Tensors are reassembled from their slices whatever world size wrote them, verified against
// their checksums unless told not to. The output appears whole or not at all (temporary file,
// fsync, rename). The whole selection is held in memory at once for kTorch, one tensor at a time
// for kHdf5.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace cohort::ckpt {

enum class ExportFormat { kTorch, kHdf5 };

// From the output's extension; UsageError naming the path for any other.
ExportFormat export_format_of(const std::string& out_path);

struct ExportOptions {
  std::string prefix = "model.";  // export the tensors whose names start with it ("": all)
  bool strip_prefix = true;       // and drop it from their names
  bool verify = true;
  // A TorchScript module (the file a `model.name = torchscript` run trained): the output is that
  // module with every parameter and buffer replaced by the checkpoint's tensor of the same name
  // (the prefix's), saved as TorchScript, which Python's torch.jit.load runs. Every one of the
  // module's tensors must be in the checkpoint with its shape, and no other: UsageError naming
  // both otherwise.
  std::string torchscript;
  // The same with the module the run kept (kRunModuleFile beside its step directories), for a
  // run of model.name = torchscript; UsageError when the run kept none.
  bool run_module = false;
};

// The copy of its TorchScript module a run keeps in its checkpoint directory (train's
// keep_run_module writes it; a resume must use the same module).
inline constexpr const char* kRunModuleFile = "module.pt";

struct ExportSummary {
  std::string source;  // the step directory read
  std::string out;
  std::int64_t step = 0;
  int tensors = 0;
  std::int64_t bytes = 0;  // the tensors' bytes, as stored in the checkpoint
};

// `path`: a step directory or a checkpoint directory (its `latest`).
ExportSummary export_checkpoint(const std::string& path, const std::string& out_path,
                                const ExportOptions& options);

// A row of `cohort ckpt export --json`: source, out, step, tensors, bytes.
nlohmann::json to_json(const ExportSummary& summary);

}  // namespace cohort::ckpt
