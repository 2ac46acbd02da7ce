#include "train/run_module.hpp"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "cohort/ckpt/export.hpp"
#include "cohort/ckpt/inspect.hpp"
#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/files.hpp"
#include "cohort/train/config.hpp"

namespace cohort::train {

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
    const std::string given = io::file_checksum(config.model.file);
    const std::string kept = io::file_checksum(copy);
    COHORT_CHECK(given == kept, ConfigError, config.model.file,
                 ": model.file: not the module this run's checkpoints were trained with (", copy,
                 ", ", kept, "; this file ", given, "): resume with model.file = ", copy,
                 ", or start another train.run_dir");
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
