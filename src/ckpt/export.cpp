#include "cohort/ckpt/export.hpp"

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/empty.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include "ckpt/files.hpp"
#include "cohort/ckpt/inspect.hpp"
#include "cohort/ckpt/reader.hpp"
#include "cohort/ckpt/tensor_parts.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/output.hpp"
#include "common/torchscript_load.hpp"
#include "io/h5/file.hpp"
#include "io/h5/h5_check.hpp"

namespace cohort::ckpt {
namespace {

namespace h5 = io::h5;
constexpr const char* kExportFormat = "cohort-checkpoint-export";
constexpr std::int64_t kExportVersion = 1;

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A tensor to export: its exported name and the checkpoint's name for it, which is a stored
// entry, or (entry null) a whole tensor joined from tensor-parallel parts.
struct Selected {
  std::string name;
  std::string stored;
  const TensorEntry* entry = nullptr;
};

// The tensors selected by the options, in the manifest's order; tensor-parallel parts are joined
// into whole tensors (ckpt/tensor_parts.hpp), and layout entries are left out.
std::vector<Selected> selection(const Manifest& m, const ExportOptions& options) {
  const auto split = tensor_split_params(m);
  std::vector<Selected> chosen;
  std::set<std::string> joined;
  for (const auto& t : m.tensors) {
    if (is_layout_entry(t.name)) continue;
    const auto whole = joined_name(t.name, split);
    const std::string& stored = whole ? *whole : t.name;
    if (stored.rfind(options.prefix, 0) != 0 || !joined.insert(stored).second) continue;
    std::string name = options.strip_prefix ? stored.substr(options.prefix.size()) : stored;
    if (!name.empty()) chosen.push_back({std::move(name), stored, whole ? nullptr : &t});
  }
  return chosen;
}

at::Tensor read_tensor(CheckpointReader& reader, const Selected& selected, bool verify) {
  if (selected.entry == nullptr) return *read_joined(reader, selected.stored, verify);
  const TensorEntry& entry = *selected.entry;
  at::Tensor t = at::empty(entry.shape, at::TensorOptions().dtype(scalar_type_of(entry.dtype)));
  reader.read(entry, t.data_ptr(), verify);
  return t;
}

ExportSummary write_torch(CheckpointReader& reader, io::TemporaryFile& tmp,
                          const ExportOptions& options) {
  ExportSummary summary;
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& selected : selection(reader.manifest(), options)) {
    const at::Tensor t = read_tensor(reader, selected, options.verify);
    dict.insert(selected.name, t);
    summary.tensors += 1;
    summary.bytes += static_cast<std::int64_t>(t.nbytes());
  }
  const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(dict));
  tmp.write(std::string_view(bytes.data(), bytes.size()));
  return summary;
}

// The module's parameters and buffers (recursively, by their dotted names), overwritten in place.
ExportSummary write_torchscript(CheckpointReader& reader, io::TemporaryFile& tmp,
                                const ExportOptions& options) {
  std::string file = options.torchscript;
  if (options.run_module) {
    file = std::filesystem::path(reader.path()).parent_path().string() + "/" + kRunModuleFile;
    std::error_code error;
    COHORT_CHECK(std::filesystem::is_regular_file(file, error), UsageError, file,
                 ": --run-module: no such file (the copy of its module a TorchScript run keeps; "
                 "this checkpoint's run kept none: name the module, --torchscript net.pt)");
  }
  torch::jit::Module module =
      torchscript::load<UsageError>(file, options.run_module ? "--run-module" : "--torchscript");
  std::map<std::string, Selected> stored;
  for (auto& selected : selection(reader.manifest(), options)) stored[selected.name] = selected;
  ExportSummary summary;
  c10::AutoGradMode no_grad(false);  // copy_ into parameters that require gradients
  const auto replace = [&](const std::string& name, at::Tensor target) {
    const auto it = stored.find(name);
    COHORT_CHECK(it != stored.end(), UsageError, reader.path(), ": no tensor '", options.prefix,
                 name, "', which ", file, " has (not the module this run trained?)");
    const at::Tensor value = read_tensor(reader, it->second, options.verify);
    COHORT_CHECK(value.sizes() == target.sizes(), UsageError, reader.path(), ": tensor '",
                 options.prefix, name, "' is ", shape_text(value.sizes().vec()), " where ", file,
                 " has ", shape_text(target.sizes().vec()));
    target.copy_(value);
    summary.tensors += 1;
    summary.bytes += static_cast<std::int64_t>(value.nbytes());
    stored.erase(it);
  };
  for (const auto& p : module.named_parameters(/*recurse=*/true)) replace(p.name, p.value);
  for (const auto& b : module.named_buffers(/*recurse=*/true)) replace(b.name, b.value);
  COHORT_CHECK(stored.empty(), UsageError, reader.path(), ": tensor '", options.prefix,
               stored.empty() ? "" : stored.begin()->first, "' is not in ", file,
               " (not the module this run trained?)");
  std::ostringstream out(std::ios::binary);
  module.save(out);
  COHORT_CHECK(out.good(), IoError, tmp.path(), ": cannot serialise the module");
  tmp.write(out.str());
  return summary;
}

ExportSummary write_hdf5(CheckpointReader& reader, io::TemporaryFile& temporary,
                         const ExportOptions& options) {
  ExportSummary summary;
  const Manifest& m = reader.manifest();
  const std::string& tmp = temporary.path();
  {
    h5::Hid file = h5::create_new_file(tmp);
    temporary.adopt();
    h5::write_attribute(file.get(), "format", kExportFormat, tmp);
    h5::write_attribute(file.get(), "format_version", kExportVersion, tmp);
    h5::write_attribute(file.get(), "step", m.step, tmp);
    h5::write_attribute(file.get(), "epoch", m.epoch, tmp);
    h5::write_attribute(file.get(), "samples_seen", m.samples_seen, tmp);
    h5::write_attribute(file.get(), "world_size", std::int64_t{m.world_size}, tmp);
    h5::write_attribute(file.get(), "config_hash", m.config_hash, tmp);
    h5::write_attribute(file.get(), "source", reader.path(), tmp);
    for (const auto& selected : selection(m, options)) {
      at::Tensor t = read_tensor(reader, selected, options.verify);
      const std::string dtype = dtype_name(t.scalar_type());
      const std::vector<std::int64_t> shape = t.sizes().vec();
      summary.tensors += 1;
      summary.bytes += static_cast<std::int64_t>(t.nbytes());
      if (dtype == "bfloat16") t = t.to(at::kFloat);  // exact; HDF5 has no bfloat16
      const io::DType type = dtype == "bfloat16" ? io::DType::kFloat32 : storage_of(dtype);
      // A 0-d tensor is stored as one element; its `shape` attribute says "[]".
      const std::int64_t rows = shape.empty() ? 1 : shape[0];
      const std::vector<std::int64_t> inner(shape.begin() + (shape.empty() ? 0 : 1), shape.end());
      const std::string& name = selected.name;
      const std::string where = tmp + ": " + name;
      h5::Hid set = h5::create_dataset(file.get(), name, type, rows, inner, 4 << 20, where);
      if (t.numel() > 0) h5::write_rows(set.get(), 0, rows, type, t.data_ptr(), where);
      h5::write_attribute(set.get(), "dtype", dtype, where);
      h5::write_attribute(set.get(), "shape", shape_text(shape), where);
    }
  }  // closed before the fsync
  fsync_file(tmp);
  return summary;
}

}  // namespace

ExportFormat export_format_of(const std::string& out_path) {
  if (ends_with(out_path, ".pt") || ends_with(out_path, ".pth")) return ExportFormat::kTorch;
  if (ends_with(out_path, ".h5") || ends_with(out_path, ".hdf5")) return ExportFormat::kHdf5;
  COHORT_THROW(UsageError, out_path,
               ": unknown export format (name it .pt or .pth for torch.load, .h5 or .hdf5 for "
               "HDF5)");
}

ExportSummary export_checkpoint(const std::string& path, const std::string& out_path,
                                const ExportOptions& options) {
  const ExportFormat format = export_format_of(out_path);
  io::OutputPlan()
      .read(path, "PATH")
      .read(options.torchscript, "--torchscript")
      .write(out_path, "--out")
      .check();
  CheckpointReader reader(resolve_checkpoint(path));
  io::TemporaryFile tmp(out_path);  // removed unless committed: never a partial export
  ExportSummary summary;
  if (!options.torchscript.empty() || options.run_module) {
    COHORT_CHECK(format == ExportFormat::kTorch, UsageError, out_path,
                 ": a TorchScript export is a .pt file");
    summary = write_torchscript(reader, tmp, options);
  } else {
    summary = format == ExportFormat::kTorch ? write_torch(reader, tmp, options)
                                             : write_hdf5(reader, tmp, options);
  }
  COHORT_CHECK(summary.tensors > 0, UsageError, reader.path(), ": no tensor name starts with '",
               options.prefix, "'");
  tmp.commit();
  summary.source = reader.path();
  summary.out = out_path;
  summary.step = reader.manifest().step;
  return summary;
}

}  // namespace cohort::ckpt
