#include "cohort/settings/config_paths.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <filesystem>

#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/unique_fd.hpp"

namespace cohort::settings {
namespace {

namespace fs = std::filesystem;

// What the key needs: a dataset (its errors exit 3, as the dataset's own), the model's file (exit
// 2, as the model's own check of model.file always did), another input file (exit 3).
enum class Wanted { kDataset, kModelFile, kFile };

std::string absolute_of(const std::string& path) {
  std::error_code error;
  const auto absolute = fs::absolute(path, error);
  return error ? path : absolute.lexically_normal().string();
}

// The first bytes of a regular file (fewer for a shorter one; none when it cannot be read).
std::string head_of(const std::string& path) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) return {};
  std::array<char, 16> bytes{};
  const ssize_t n = ::pread(fd.get(), bytes.data(), bytes.size(), 0);
  return n > 0 ? std::string(bytes.data(), static_cast<std::size_t>(n)) : std::string();
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// IDX (MNIST's and Fashion-MNIST's format): two zero bytes, a type code, 1..4 dimensions.
bool is_idx(const std::string& head) {
  if (head.size() < 4 || head[0] != '\0' || head[1] != '\0') return false;
  const auto type = static_cast<unsigned char>(head[2]);
  const auto dims = static_cast<unsigned char>(head[3]);
  return (type == 0x08 || type == 0x09 || (type >= 0x0B && type <= 0x0E)) && dims >= 1 && dims <= 4;
}

void check_one(const std::string& key, const std::string& path, Wanted wanted) {
  if (path.empty()) return;
  const std::string absolute = absolute_of(path);
  const std::string what = io::describe_path(path);
  const std::string where = key + " = " + path + ": " + absolute + ": ";
  const bool shard_directory = wanted == Wanted::kDataset && what == "a directory";
  if (what != "a regular file" && !shard_directory) {
    const bool relative = !path.empty() && path[0] != '/';
    std::error_code error;
    const std::string message =
        where + what +
        (wanted == Wanted::kDataset ? " (a dataset file or a directory of shards is needed)"
                                    : " (a regular file is needed)") +
        (relative ? "; relative paths are taken from the working directory, " +
                        fs::current_path(error).string()
                  : "");
    if (wanted == Wanted::kModelFile) COHORT_THROW(ConfigError, message);
    COHORT_THROW(IoError, message);
  }
  if (shard_directory) {
    std::error_code error;
    bool shards = false;
    for (fs::directory_iterator it(path, error), end; !error && it != end && !shards;
         it.increment(error)) {
      shards = it->path().extension() == ".h5";
    }
    COHORT_CHECK(shards, IoError, where, "a directory without *.h5 shards");
    return;
  }
  if (wanted != Wanted::kDataset) return;
  const std::string hint = import_hint(path);
  COHORT_CHECK(hint.empty(), IoError, where, "not an HDF5 dataset but ", hint);
}

}  // namespace

std::string import_hint(const std::string& path) {
  const std::string head = head_of(path);
  if (starts_with(head, "\x89HDF\r\n\x1a\n")) return {};
  if (is_idx(head) || (starts_with(head, "\x1f\x8b") && path.find("-ubyte") != std::string::npos)) {
    return "a raw IDX file (MNIST's format); `cohort data import fashion-mnist DIR --split "
           "train|test --out FILE.h5` makes a dataset of Fashion-MNIST's files (docs/data.md)";
  }
  if (starts_with(head, "\x1f\x8b")) {
    return "a gzip file; `cohort data import csv FILE.csv.gz --out FILE.h5` makes a dataset of a "
           "gzipped CSV, `import fashion-mnist DIR --split train|test` of gzipped IDX files "
           "(docs/data.md)";
  }
  if (starts_with(head, "\x89PNG") || starts_with(head, "\xff\xd8\xff")) {
    return "an image; `cohort data import images DIR --size H,W --out FILE.h5` makes a dataset "
           "of a directory of images, one subdirectory per class (docs/data.md)";
  }
  if (starts_with(head, "\x93NUMPY")) {
    return "a NumPy array; `cohort data import npy INPUTS.npy TARGETS.npy --out FILE.h5` makes a "
           "dataset of inputs and labels (docs/data.md)";
  }
  if (ends_with(path, ".csv")) {
    return "a CSV file; `cohort data import csv FILE.csv --out FILE.h5` makes a dataset of it "
           "(docs/data.md)";
  }
  if (ends_with(path, ".txt") || ends_with(path, ".jsonl") || ends_with(path, ".tsv")) {
    return "a text file; `cohort data import text` (language models) or `labelled-text` "
           "(classification) makes a dataset of it (docs/data.md)";
  }
  return {};
}

void check_input_paths(const TrainConfig& config) {
  check_one("data.path", config.data.path, Wanted::kDataset);
  check_one("data.val_path", config.data.val_path, Wanted::kDataset);
  if (config.model.name == "torchscript") {
    check_one("model.file", config.model.file, Wanted::kModelFile);
  }
  check_one("data.transform", config.data.transform, Wanted::kFile);
}

void add_inputs(const TrainConfig& config, io::OutputPlan& plan) {
  plan.read(config.data.path, "data.path")
      .read(config.data.val_path, "data.val_path")
      .read(config.data.transform, "data.transform")
      .read(config.model.init_from, "model.init_from");
  if (config.model.name == "torchscript") plan.read(config.model.file, "model.file");
}

void check_training_outputs(const TrainConfig& config) {
  using Kind = io::OutputPlan::Kind;
  const std::string& run = config.train.run_dir;
  // monitor.prom_file and monitor.tensorboard_dir: relative to the run directory.
  const auto in_run = [&run](const std::string& path) {
    return path.empty() || path.front() == '/' ? path : run + "/" + path;
  };
  // Nothing is made here: in a run directory not there yet, the run's files are new names that
  // can be no input (the directory itself is checked).
  std::error_code error;
  const bool run_there = fs::is_directory(run, error);
  io::OutputPlan plan;
  add_inputs(config, plan);
  plan.write(run, "train.run_dir", Kind::kDirectory)
      .write(config.checkpoint_dir(), "checkpoint.dir", Kind::kDirectory);
  if (run_there) {
    plan.write(run + "/config.resolved.ini", "the run's config.resolved.ini")
        .write(run + "/metrics.jsonl", "the run's metrics.jsonl");
  }
  const std::string& prom = config.monitor.prom_file;  // outside the run when absolute
  if (!prom.empty() && (run_there || prom.front() == '/')) {
    plan.write(in_run(prom), "monitor.prom_file");
  }
  if (!config.monitor.tensorboard_dir.empty()) {
    plan.write(in_run(config.monitor.tensorboard_dir), "monitor.tensorboard_dir", Kind::kDirectory);
  }
  plan.check();
}

}  // namespace cohort::settings
