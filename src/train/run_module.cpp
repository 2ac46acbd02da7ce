#include "train/run_module.hpp"

#include <unistd.h>

#include <torch/csrc/jit/api/module.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cohort/ckpt/export.hpp"
#include "cohort/ckpt/inspect.hpp"
#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/files.hpp"
#include "cohort/settings/config.hpp"
#include "common/torchscript_load.hpp"

namespace cohort::train {
namespace {

// "__torch__.Net___torch_mangle_3" -> "__torch__.Net": the suffix a class gets when the same
// Python class is scripted twice in one process.
// A loop, not std::regex: the text comes from a user's file, and std::regex recurses per
// character matched.
std::string unmangled(const std::string& text) {
  static const std::string kMangle = "___torch_mangle_";
  std::string out;
  std::size_t at = 0;
  for (std::size_t hit = text.find(kMangle); hit != std::string::npos;
       hit = text.find(kMangle, at)) {
    std::size_t end = hit + kMangle.size();
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    const bool digits = end > hit + kMangle.size();
    out.append(text, at, (digits ? hit : end) - at);  // without digits: not a mangle, kept
    at = end;
  }
  return out.append(text, at, std::string::npos);
}

std::string tensor_line(const char* what, const std::string& name, const at::Tensor& t) {
  std::ostringstream line;
  line << what << " " << name << " " << t.sizes() << " " << t.dtype()
       << (t.requires_grad() ? " trained" : "");
  return line.str();
}

// The first line where two signatures differ, both sides, for the refusal.
std::string first_difference(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const auto n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  const auto side = [i](const std::vector<std::string>& v) {
    return i < v.size() ? "'" + v[i].substr(0, 160) + "'" : std::string("(nothing)");
  };
  return side(a) + " against " + side(b);
}

}  // namespace

std::vector<std::string> module_signature(const std::string& path, const std::string& key) {
  const torch::jit::Module module = torchscript::load<ConfigError>(path, key);
  std::vector<std::string> lines;
  for (const auto& sub : module.named_modules()) {
    const std::string name = sub.name.empty() ? "(top)" : sub.name;
    const auto type = sub.value.type()->name();
    lines.push_back("module " + name + " " + unmangled(type ? type->qualifiedName() : "?"));
    for (const auto& method : sub.value.get_methods()) {
      std::istringstream graph(
          unmangled(method.graph()->toString(/*print_source_locations=*/false)));
      for (std::string line; std::getline(graph, line);) {
        lines.push_back(name + "." + method.name() + ": " + line);
      }
    }
  }
  for (const auto& p : module.named_parameters())
    lines.push_back(tensor_line("parameter", p.name, p.value));
  for (const auto& b : module.named_buffers())
    lines.push_back(tensor_line("buffer", b.name, b.value));
  return lines;
}

void keep_run_module(const Config& config, int rank) {
  if (config.model.name != "torchscript" || config.model.file.empty()) return;
  const std::string dir = config.checkpoint_dir();
  const std::string copy = dir + "/" + ckpt::kRunModuleFile;
  std::error_code error;
  // A missing or unreadable model.file is reported by the model itself, naming the key.
  if (!std::filesystem::is_regular_file(config.model.file, error)) return;
  // Checkpoints as a resume finds them: any committed step directory, with or without `latest`.
  if (std::filesystem::is_directory(dir, error) && !ckpt::list_checkpoints(dir).empty() &&
      std::filesystem::is_regular_file(copy, error)) {
    if (std::filesystem::equivalent(config.model.file, copy, error)) return;
    if (io::file_checksum(config.model.file) == io::file_checksum(copy)) return;
    const auto given = module_signature(config.model.file, "model.file");
    const auto kept = module_signature(copy, "the run's kept module");
    COHORT_CHECK(given == kept, ConfigError, config.model.file,
                 ": model.file: not the module this run's checkpoints were trained with (", copy,
                 "): first difference ", first_difference(given, kept),
                 "; resume with model.file = ", copy, ", or start another train.run_dir");
    return;
  }
  if (rank != 0) return;
  io::make_directories(dir);
  const std::string tmp = copy + ".tmp-" + std::to_string(::getpid());
  std::filesystem::copy_file(config.model.file, tmp,
                             std::filesystem::copy_options::overwrite_existing, error);
  if (error) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);  // a partial copy
  }
  COHORT_CHECK(!error, IoError, copy, ": cannot keep a copy of model.file ", config.model.file,
               ": ", error.message());
  io::commit_file(tmp, copy);  // renamed whole into place (or removed)
}

}  // namespace cohort::train
