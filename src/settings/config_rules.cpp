// The rules between keys, checked once at load (Config::load), and what the typed sections derive
// from the table: choice names.
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "cohort/error.hpp"
#include "cohort/settings/config.hpp"
#include "cohort/settings/model_options.hpp"
#include "settings/config_fields.hpp"
#include "settings/model_catalog.hpp"
#include "settings/name_patterns.hpp"
#include "settings/signals.hpp"

namespace cohort::settings {
namespace {

std::string join(std::initializer_list<std::string> parts) {
  std::string out;
  for (const auto& part : parts) out += part;
  return out;
}

bool pipelined(const TrainConfig& c) { return c.parallel.pipeline_stages > 1; }

// One host name or address: a comma would open more listeners in the exporter (civetweb's syntax).
bool one_host(const std::string& text) {
  return !text.empty() &&
         text.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") ==
             std::string::npos;
}

const KeySpec& find_key(const char* section, const char* key) {
  for (const auto& spec : config_table()) {
    if (std::string(spec.section) == section && std::string(spec.key) == key) return spec;
  }
  COHORT_THROW(Error, "config: no key ", section, ".", key, " (a bug)");
}

// Why model.name names no model, or "". Without a library loader (the light `cohort`), the
// names a config's libraries register cannot be known, so only a config without any is checked.
std::string unknown_model(const ModelConfig& model) {
  if (!model.library.empty() && catalog::library_loader() == nullptr) return "";
  std::istringstream builtins(kBuiltinModels);
  for (std::string name; std::getline(builtins, name, '|');) {
    if (name == model.name) return "";
  }
  if (catalog::has_model(model.name)) return "";
  std::string known = std::string("built in: ") + kBuiltinModels;
  for (const auto& name : catalog::models_from_libraries()) known += "; " + name;
  return "no model '" + model.name + "' (" + known +
         (model.library.empty() ? "; model.library loads others)" : ")");
}

// The optimizer and the split of the model over ranks.
std::vector<ConfigRule> optimizer_and_parallel_rules() {
  using C = const TrainConfig&;
  return {
      {"optim.lr", "optim.lr > 0",
       [](C c) -> std::string { return c.optim.lr > 0 ? "" : "must be > 0"; }},
      {"optim.nesterov", "optim.nesterov needs optim.momentum > 0",
       [](C c) -> std::string {
         return !c.optim.nesterov || c.optim.momentum > 0 ? "" : "needs optim.momentum > 0";
       }},
      {"parallel.micro_batches",
       "with pipeline stages, data.batch_size divides by parallel.micro_batches",
       [](C c) -> std::string {
         if (!pipelined(c) || c.data.batch_size % c.parallel.micro_batches == 0) return "";
         return join({"data.batch_size = ", std::to_string(c.data.batch_size),
                      " is not divisible by parallel.micro_batches = ",
                      std::to_string(c.parallel.micro_batches)});
       }},
      {"optim.accumulation", "with pipeline stages, optim.accumulation = 1",
       [](C c) -> std::string {
         return !pipelined(c) || c.optim.accumulation == 1
                    ? ""
                    : "must be 1 with pipeline stages (use parallel.micro_batches)";
       }},
      {"parallel.partition", "parallel.partition is empty or has one entry per pipeline stage",
       [](C c) -> std::string {
         const auto n = static_cast<std::int64_t>(c.parallel.partition.size());
         if (n == 0 || n == c.parallel.pipeline_stages) return "";
         return join({"has ", std::to_string(n), " entries for parallel.pipeline_stages = ",
                      std::to_string(c.parallel.pipeline_stages)});
       }},
  };
}

// The model, its initialisation and its task.
std::vector<ConfigRule> model_and_task_rules() {
  using C = const TrainConfig&;
  return {
      {"model.name",
       "model.name is a built-in model or one that a library of model.library registers",
       [](C c) -> std::string { return unknown_model(c.model); }},
      {"model.heads", "gpt: model.width divides by model.heads",
       [](C c) -> std::string {
         if (c.model.name != "gpt" || c.model.width % c.model.heads == 0) return "";
         return join({"model.width ", std::to_string(c.model.width),
                      " is not divisible by model.heads ", std::to_string(c.model.heads)});
       }},
      {"train.loss", "train.loss fits train.task (docs/models.md, \"Tasks and losses\")",
       [](C c) -> std::string { return loss_task_mismatch(c.train.task, c.train.loss); }},
      {"train.label_smoothing", "train.label_smoothing and class_weights need cross_entropy",
       [](C c) -> std::string {
         const bool cross_entropy =
             c.train.loss == LossKind::kCrossEntropy ||
             (c.train.loss == LossKind::kAuto &&
              (c.train.task == TaskKind::kAuto || c.train.task == TaskKind::kClassification ||
               c.train.task == TaskKind::kLanguageModel));
         if (cross_entropy || (c.train.label_smoothing == 0 && c.train.class_weights.empty()))
           return "";
         return "label_smoothing and class_weights apply to the cross_entropy loss only";
       }},
      {"optim.lr_scale", "optim.lr_scale is REGEX:FACTOR,... (regular expressions, factors >= 0)",
       [](C c) -> std::string { return lr_scale_problem(c.optim.lr_scale); }},
      {"model.recompute", "model.recompute is none, blocks or every:K (K >= 1)",
       [](C c) -> std::string {
         return recompute_segment(c.model.recompute) >= 0
                    ? ""
                    : "'" + c.model.recompute + "' is not none, blocks or every:K";
       }},
      {"model.freeze", "model.freeze is a regular expression",
       [](C c) -> std::string { return regex_problem(c.model.freeze); }},
      {"model.init_skip", "model.init_skip is a regular expression",
       [](C c) -> std::string { return regex_problem(c.model.init_skip); }},
      {"model.init_prefix_map", "model.init_prefix_map is FROM:TO,... (prefixes of names)",
       [](C c) -> std::string { return prefix_map_problem(c.model.init_prefix_map); }},
  };
}

// The run around the training: monitoring, evaluations, signals.
std::vector<ConfigRule> run_rules() {
  using C = const TrainConfig&;
  return {
      {"monitor.http_bind", "monitor.http_bind is one host name or address",
       [](C c) -> std::string {
         return one_host(c.monitor.http_bind)
                    ? ""
                    : "'" + c.monitor.http_bind + "' is not one host name or address";
       }},
      {"checkpoint.best_metric",
       "checkpoint.best_metric needs data.val_path (what it is measured on)",
       [](C c) -> std::string {
         return c.checkpoint.best_metric == TargetMetric::kNone || !c.data.val_path.empty()
                    ? ""
                    : "needs data.val_path: the best checkpoints are chosen by evaluations";
       }},
      {"train.early_stop_patience",
       "train.early_stop_patience needs data.val_path and a metric (train.early_stop_metric or "
       "checkpoint.best_metric)",
       [](C c) -> std::string {
         if (c.train.early_stop_patience == 0) return "";
         if (c.data.val_path.empty()) return "needs data.val_path: it counts evaluations";
         return c.train.early_stop_metric != TargetMetric::kNone ||
                        c.checkpoint.best_metric != TargetMetric::kNone
                    ? ""
                    : "needs train.early_stop_metric or checkpoint.best_metric";
       }},
      {"slurm.signals",
       "slurm.signals lists USR1, USR2, TERM, INT, HUP, QUIT, XCPU (SIG prefix optional)",
       [](C c) -> std::string {
         const std::string bad = unknown_signal(c.slurm.signals);
         return bad.empty()
                    ? ""
                    : "unknown signal '" + bad + "' (USR1, USR2, TERM, INT, HUP, QUIT, XCPU)";
       }},
  };
}

}  // namespace

const std::vector<ConfigRule>& config_rules() {
  // In this order: a config that breaks several rules is told about the first.
  static const std::vector<ConfigRule> rules = [] {
    std::vector<ConfigRule> all;
    for (const auto& part : {optimizer_and_parallel_rules, model_and_task_rules, run_rules}) {
      auto some = part();
      all.insert(all.end(), std::make_move_iterator(some.begin()),
                 std::make_move_iterator(some.end()));
    }
    return all;
  }();
  return rules;
}

int recompute_segment(const std::string& text) {
  if (text == "none") return 0;
  if (text == "blocks") return 1;
  const std::string prefix = "every:";
  if (text.compare(0, prefix.size(), prefix) != 0 || text.size() == prefix.size() ||
      text.size() > prefix.size() + 6 ||
      text.find_first_not_of("0123456789", prefix.size()) != std::string::npos) {
    return -1;
  }
  const int k = std::stoi(text.substr(prefix.size()));
  return k >= 1 ? k : -1;
}

namespace detail {

int choice_index(const KeySpec& spec, const std::string& text) {
  int index = 0;
  std::istringstream choices(spec.choices);
  for (std::string choice; std::getline(choices, choice, '|'); ++index) {
    if (choice == text) return index;
  }
  COHORT_THROW(Error, "config: '", text, "' is not a choice of ", spec.key, " (a bug)");
}

}  // namespace detail

namespace {
std::string choice_text(const char* section, const char* key, int index) {
  std::istringstream choices(find_key(section, key).choices);
  std::string choice;
  for (int i = 0; i <= index && std::getline(choices, choice, '|'); ++i) {
  }
  return choice;
}
}  // namespace

#define COHORT_CHOICE_TEXT(Enum, section, key)                 \
  template <>                                                  \
  std::string to_string(Enum value) {                          \
    return choice_text(section, key, static_cast<int>(value)); \
  }
COHORT_CHOICE_TEXT(Optimizer, "optim", "name")
COHORT_CHOICE_TEXT(LrScheduleKind, "optim", "schedule")
COHORT_CHOICE_TEXT(TargetMetric, "train", "target_metric")
COHORT_CHOICE_TEXT(Precision, "train", "precision")
COHORT_CHOICE_TEXT(TaskKind, "train", "task")
COHORT_CHOICE_TEXT(LossKind, "train", "loss")
COHORT_CHOICE_TEXT(IoDriver, "data", "driver")
COHORT_CHOICE_TEXT(GradBackend, "parallel", "backend")
COHORT_CHOICE_TEXT(PipelineSchedule, "parallel", "schedule")
COHORT_CHOICE_TEXT(ConsoleMode, "monitor", "console")
COHORT_CHOICE_TEXT(Materialize, "model", "materialize")
#undef COHORT_CHOICE_TEXT

std::string loss_task_mismatch(TaskKind task, LossKind loss) {
  if (task == TaskKind::kAuto || loss == LossKind::kAuto) return "";
  const bool fits =
      (task == TaskKind::kClassification || task == TaskKind::kLanguageModel)
          ? loss == LossKind::kCrossEntropy
      : task == TaskKind::kRegression
          ? (loss == LossKind::kMse || loss == LossKind::kL1 || loss == LossKind::kHuber)
          : loss == LossKind::kBce;
  if (fits) return "";
  return "train.loss = " + to_string(loss) + " does not fit train.task = " + to_string(task) +
         " (classification, language_model: cross_entropy; regression: mse, l1, huber; "
         "multilabel: bce)";
}

}  // namespace cohort::settings

namespace cohort::settings {

// The parses of model_options.hpp: the table's own, for a model's declared keys.
void parse_key_text(std::int64_t& out, const std::string& text) {
  detail::parse_field(out, KeySpec{}, text);
}
void parse_key_text(double& out, const std::string& text) {
  detail::parse_field(out, KeySpec{}, text);
}
void parse_key_text(bool& out, const std::string& text) {
  detail::parse_field(out, KeySpec{}, text);
}
void parse_key_text(std::string& out, const std::string& text) {
  detail::parse_field(out, KeySpec{}, text);
}
void parse_key_text(std::vector<std::int64_t>& out, const std::string& text) {
  detail::parse_field(out, KeySpec{}, text);
}
void parse_key_text(std::vector<double>& out, const std::string& text) {
  detail::parse_field(out, KeySpec{}, text);
}

}  // namespace cohort::settings
