// Which committed checkpoints stay (checkpoint.keep_last, keep_every, the best ones) and the
// `best` link beside them: rank 0's part of TrainCheckpoints, run after each commit.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "cohort/ckpt/manifest.hpp"
#include "train/checkpointing.hpp"

namespace cohort::train {
namespace fs = std::filesystem;

// Keeps the newest checkpoint.keep_last, every step divisible by checkpoint.keep_every, and the
// best ones (checkpoint.best_metric), then links `best`.
void TrainCheckpoints::apply_retention() {
  std::lock_guard<std::mutex> lock(best_mutex_);
  remove_old_checkpoints();
  update_best_link();  // after the removals: it never names one of them
}

void TrainCheckpoints::remove_old_checkpoints() {
  const std::int64_t keep_last = options_.keep_last;
  const std::int64_t keep_every = options_.keep_every;
  if (keep_last <= 0) return;
  std::vector<std::pair<std::int64_t, fs::path>> steps;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir_, error)) {
    // Exact names only, and directories a save made (ckpt::is_checkpoint_directory): a user's
    // "step-00000001-backup/", a link, or a "step-00000001/" of their own is left alone.
    const auto step = ckpt::parse_step_dir_name(entry.path().filename().string());
    if (step && entry.is_directory(error) && !entry.is_symlink(error)) {
      if (ckpt::is_checkpoint_directory(entry.path().string())) {
        steps.emplace_back(*step, entry.path());
      } else if (!said_foreign_) {  // once a run: retention runs after every commit
        said_foreign_ = true;
        std::fprintf(stderr, "cohort: warning: %s holds no checkpoint: left alone\n",
                     entry.path().c_str());
      }
    }
  }
  std::sort(steps.rbegin(), steps.rend());
  for (std::size_t i = static_cast<std::size_t>(keep_last); i < steps.size(); ++i) {
    if (keep_every > 0 && steps[i].first % keep_every == 0) continue;
    if (std::count(best_steps_.begin(), best_steps_.end(), steps[i].first) != 0) continue;
    fs::remove_all(steps[i].second, error);
  }
}

// <dir>/best: a relative link to the first best step that is committed (its manifest is the
// last file a save writes), replaced atomically; a `best` that is not a link is the user's and
// is left alone, said once. Runs after every commit (retention), so a link of ours never
// outlives the checkpoint it names.
void TrainCheckpoints::update_best_link() {
  if (comm_->rank() != 0) return;
  std::error_code error;
  for (const std::int64_t step : best_steps_) {
    const std::string name = ckpt::step_dir_name(step);
    if (!fs::is_regular_file(fs::path(dir_) / name / "manifest.json", error)) continue;
    const fs::path link = fs::path(dir_) / "best";
    if (fs::exists(fs::symlink_status(link, error)) && !fs::is_symlink(link, error)) {
      static bool said = false;
      if (!said)
        std::fprintf(stderr, "cohort: warning: %s is not a link: not replaced\n", link.c_str());
      said = true;
      return;
    }
    const fs::path temporary = fs::path(dir_) / (".best.link-" + std::to_string(::getpid()));
    // A link of ours left by a failed rename goes; anything else at the name is not ours.
    if (fs::is_symlink(temporary, error)) fs::remove(temporary, error);
    fs::create_directory_symlink(name, temporary, error);
    if (!error) fs::rename(temporary, link, error);
    if (error) {
      std::fprintf(stderr, "cohort: warning: cannot link %s to %s: %s\n", link.c_str(),
                   name.c_str(), error.message().c_str());
      if (fs::is_symlink(temporary, error)) fs::remove(temporary, error);
    }
    return;
  }
  // No best step committed (best_metric switched off, or its checkpoints gone): a link of ours
  // that leads nowhere goes.
  const fs::path link = fs::path(dir_) / "best";
  if (fs::is_symlink(link, error) && !fs::exists(link, error)) fs::remove(link, error);
}

}  // namespace cohort::train
