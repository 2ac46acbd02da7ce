// Config: the trainer's settings, typed once at load. One table (section, key, the field it fills,
// type, default, help, range) read from an INI file with Boost.Program_options and overridden by
// `--set section.key=value`; the result is a TrainConfig of per-section structs.
//
// Protocol: Config::load(file, overrides) validates everything up front: an unknown key names the
// file, the line and the nearest valid key; a bad value names the file, line, key and the
// expected type, choices or range; a broken cross-field rule (config_rules()) names the file and
// line of the key it is about (exit code 2). After load every field holds its value (its default
// when not given) and nothing else reads settings by name: modules take their own option structs,
// which the trainer fills from these sections. resolved_ini() writes every key, hash() identifies
// that resolved text (checkpoints record it). The table is also the reference page,
// docs/config.md (reference_markdown()).
//
// A key is declared once, in the table (src/settings/config_table.cpp), with COHORT_KEY(section,
// key): the key's name is the field's name, so a key without a field, or a field read under a
// misspelt name, does not compile; a unit test checks that no field lacks a key. A model of a
// library or program declares the keys of its own section, [model name], bound to its own struct
// (model_options.hpp): load() first loads the libraries of model.library (their models register
// themselves and their sections), then validates every section alike. In an executable without
// the library loader (the light `cohort`, which hands `config check` of such a config over to
// cohort-torch), the sections of a config's libraries are not validated and model.name is not
// checked; the settings of the built-in sections are.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cohort::settings {

// Each enum's order is its key's choices' order in the table ("sgd|adamw").
enum class Optimizer { kSgd, kAdamw };
enum class LrScheduleKind { kConstant, kStep, kCosine };
enum class TargetMetric { kNone, kAccuracy, kLoss, kPerplexity, kMae, kR2, kMicroF1 };
// train.task: what the targets are (kAuto: inferred from the dataset, docs/models.md).
enum class TaskKind { kAuto, kClassification, kRegression, kMultilabel, kLanguageModel };
enum class LossKind { kAuto, kCrossEntropy, kMse, kL1, kHuber, kBce };
enum class Precision { kFp32, kBf16 };
// model.materialize: every rank builds the whole model, or only its own part (materialize.hpp).
enum class Materialize { kWhole, kOwn };
enum class IoDriver { kPosix, kMpio };
enum class GradBackend { kMpi, kNccl };
enum class PipelineSchedule { k1f1b, kGpipe };
enum class ConsoleMode { kAuto, kBar, kLines };

struct ModelConfig {
  // A registered model: built in (kBuiltinModels) or from a library of model.library.
  std::string name;
  std::string library;  // shared libraries of models, comma-separated, loaded at Config::load
  std::vector<std::int64_t> hidden;
  double dropout = 0;
  std::int64_t width = 0;
  std::int64_t blocks = 0;
  bool channels_last = false;
  std::int64_t heads = 0;
  std::int64_t context = 0;
  std::string file;  // torchscript: the saved module
  double flops_per_sample = 0;
  bool jit_optimize = false;  // torchscript: the graph executor's optimizing passes
  std::string init_from;      // weights to start from (docs/models.md, "Pretrained weights")
  bool init_strict = true;
  std::string init_prefix_map;    // "from.:to.,..."
  std::string init_skip;          // a regex: model tensors init_from leaves as initialised
  std::string freeze;             // a regex over parameter names
  bool freeze_statistics = true;  // frozen modules' running statistics stay as they are
  std::string recompute;          // none | blocks | every:K (recompute_segment())
  Materialize materialize = Materialize::kWhole;
  double max_build_gib = 0;  // the memory building the model may hold (0: this host's memory)
  // The selected model's own section, typed (its ModelOptions struct), when it declared one.
  std::shared_ptr<const void> options;
};

// The models compiled into Cohort, as model.name spells them.
inline constexpr const char* kBuiltinModels = "mlp|cnn|gpt|fields_mlp|torchscript";

struct DataConfig {
  std::string path;
  std::string val_path;
  std::int64_t batch_size = 0;
  bool shuffle = false;
  std::int64_t prefetch = 0;
  std::int64_t workers = 1;
  bool caller_reads = true;
  std::string transform;
  IoDriver driver = IoDriver::kPosix;
  std::int64_t crop_padding = 0;
  bool flip = false;
  std::int64_t max_length = 0;
  std::int64_t bucket = 0;
  std::string target;
};

struct OptimConfig {
  Optimizer name = Optimizer::kSgd;
  double lr = 0;
  double momentum = 0;
  bool nesterov = false;
  double weight_decay = 0;
  double beta1 = 0;
  double beta2 = 0;
  double eps = 0;
  LrScheduleKind schedule = LrScheduleKind::kConstant;
  std::int64_t warmup_steps = 0;
  std::int64_t step_size = 0;
  double gamma = 0;
  double min_lr = 0;
  double clip_norm = 0;
  std::int64_t accumulation = 0;
  std::string lr_scale;  // "REGEX:FACTOR,...": the first match scales a parameter's lr
};

struct TrainSection {
  std::int64_t epochs = 0;
  std::int64_t max_steps = 0;
  std::int64_t eval_every = 0;
  std::int64_t log_every = 0;
  std::int64_t seed = 0;
  TargetMetric target_metric = TargetMetric::kNone;
  double target_value = 0;
  std::int64_t early_stop_patience = 0;
  TargetMetric early_stop_metric = TargetMetric::kNone;  // none: checkpoint.best_metric
  double early_stop_min_delta = 0;
  std::int64_t threads = 0;
  Precision precision = Precision::kFp32;
  std::int64_t blas_threads = 0;
  bool malloc_tuning = false;
  std::string run_dir;
  TaskKind task = TaskKind::kAuto;
  LossKind loss = LossKind::kAuto;
  double label_smoothing = 0;
  std::vector<double> class_weights;  // empty: every class weighs 1
  double huber_delta = 1;
  std::int64_t top_k = 5;
};

struct ParallelConfig {
  GradBackend backend = GradBackend::kMpi;
  double bucket_mb = 0;
  std::int64_t timeout_s = 0;
  bool overlap = false;
  std::int64_t zero = 0;  // ZeRO stage over the data-parallel group
  std::int64_t pipeline_stages = 0;
  std::int64_t tensor = 0;
  std::int64_t micro_batches = 0;
  PipelineSchedule schedule = PipelineSchedule::k1f1b;
  std::vector<std::int64_t> partition;
  std::string devices;
};

// What ZeRO (parallel.zero) shards over the data-parallel ranks: asked here by what is sharded,
// not by comparing stage numbers wherever it matters (the trainer's Parallelism::zero(), the
// doctor's memory estimate).
struct ZeroSharding {
  int stage = 0;  // 0 (plain DDP) to 3
  bool any() const { return stage > 0; }
  bool optimizer_state() const { return stage >= 1; }
  bool gradients() const { return stage >= 2; }
  bool parameters() const { return stage >= 3; }
  // What a rank holds for its share only, besides the optimizer state: "", " and gradients" or
  // ", gradients and parameters" (the trainer's banner).
  const char* held_too() const {
    return parameters() ? ", gradients and parameters" : gradients() ? " and gradients" : "";
  }
};
inline ZeroSharding zero_sharding(const ParallelConfig& parallel) {
  return {static_cast<int>(parallel.zero)};
}

struct CheckpointConfig {
  std::string dir;  // empty: <train.run_dir>/checkpoints (see checkpoint_dir())
  std::int64_t every_steps = 0;
  bool at_end = false;
  TargetMetric best_metric = TargetMetric::kNone;
  std::int64_t best_keep = 0;
  bool async = false;
  std::int64_t keep_last = 0;
  std::int64_t keep_every = 0;
  bool resume = false;
  bool verify = false;
};

struct MonitorConfig {
  bool enabled = false;
  std::int64_t summary_every = 0;
  std::string prom_file;
  std::string tensorboard_dir;
  std::int64_t grad_norm_every = 0;
  std::int64_t http_port = 0;
  std::string http_bind;
  ConsoleMode console = ConsoleMode::kAuto;
  double peak_tflops = 0;
  double data_bound_fraction = 0;
  double gpu_util_low = 0;
  double comm_bound_fraction = 0;
  double straggler_margin = 0;
  double cpu_contention = 0;
  std::int64_t straggler_windows = 0;
  std::int64_t divergence_windows = 0;
  double divergence_rise = 0;
};

struct SlurmConfig {
  std::string signals;  // "USR1,TERM", names checked at load
  bool requeue = false;
  std::int64_t time_margin = 0;
  std::int64_t max_restarts = 0;
  std::int64_t max_preemptions = 0;
  std::int64_t max_failures = 0;
  std::int64_t max_preflight_requeues = 0;
  bool preflight = false;
  double preflight_bandwidth = 0;
  std::int64_t preflight_timeout = 0;
  std::int64_t max_excluded_nodes = 0;
  std::int64_t node_failure_wait = 0;
  std::int64_t spare_nodes = 0;
};

struct DebugConfig {
  std::int64_t data_delay_ms = 0;
  std::int64_t slow_rank = 0;
  std::int64_t slow_ms = 0;
  std::int64_t device_fault_step = 0;
  std::int64_t device_fault_rank = 0;
  std::string doctor_fault;           // "NODE:CHECK"
  std::int64_t start_delay_rank = 0;  // this rank enters MPI start-up start_delay_s late
  std::int64_t start_delay_s = 0;
};

// Every setting, one struct per section, in config_sections() order.
struct TrainConfig {
  ModelConfig model;
  DataConfig data;
  OptimConfig optim;
  TrainSection train;
  ParallelConfig parallel;
  CheckpointConfig checkpoint;
  MonitorConfig monitor;
  SlurmConfig slurm;
  DebugConfig debug;

  // checkpoint.dir, or <train.run_dir>/checkpoints when it is empty.
  std::string checkpoint_dir() const;
};

enum class KeyType { kInt, kFloat, kBool, kString, kChoice, kIntList, kFloatList };

// No bound on that side of a key's range.
inline constexpr double kNoLimit = std::numeric_limits<double>::infinity();

struct KeySpec;

// Where a key's value lands in a TrainConfig: set() parses the key's validated canonical text into
// the field, field() returns the field's address (distinct per key: the table test checks it).
struct FieldRef {
  void (*set)(TrainConfig& config, const KeySpec& spec, const std::string& text);
  const void* (*field)(const TrainConfig& config);
};

struct KeySpec {
  const char* section;
  const char* key;
  FieldRef ref;
  KeyType type;
  const char* default_value;
  const char* help;
  // kChoice: "a|b|c", the values allowed; kString: the usual ones, for the reference and the
  // shell's completion (model.name: the built-in models), not a limit.
  const char* choices = "";
  // kInt, kFloat and each item of kIntList and kFloatList: the closed range a value must lie in,
  // checked at load (a negative epoch count, a dropout of 2 or a zero width are config errors, not
  // crashes).
  double min = -kNoLimit;
  double max = kNoLimit;
};

// A rule between keys (or about a key's text beyond its type), checked at load after every key
// has its value. problem() returns "" when the rule holds, else what is wrong; the error names
// the file and line of `key`.
struct ConfigRule {
  const char* key;   // "section.key" the error points at
  const char* rule;  // what must hold, for docs/config.md
  std::string (*problem)(const TrainConfig& config);
};

// The sections, in file order, every key, and every cross-field rule.
const std::vector<std::string>& config_sections();
const std::vector<KeySpec>& config_table();
const std::vector<ConfigRule>& config_rules();

class Config : public TrainConfig {
 public:
  // file may be empty (defaults and overrides only). Throws ConfigError.
  static Config load(const std::string& file, const std::vector<std::string>& overrides = {});

  std::string resolved_ini() const;  // every key, table order, with a header comment
  std::string hash() const;          // "xxh3-64:..." of resolved_ini()'s key lines

 private:
  // The keys resolved_ini() writes and hash() covers: the table's, in section order, then the
  // sections of the model libraries loaded.
  std::vector<const KeySpec*> resolved_specs() const;

  std::map<std::string, std::string> text_;  // "section.key" -> canonical text, validated
};

// The text of a choice field's value, as the table spells it: to_string(Optimizer::kAdamw) ==
// "adamw". Defined for each choice enum above.
template <typename Enum>
std::string to_string(Enum value);

// Why `loss` cannot train `task` (one line), or empty when it can (or either is auto).
std::string loss_task_mismatch(TaskKind task, LossKind loss);

// model.recompute as blocks per recomputed segment: 0 for none, 1 for blocks, K for every:K;
// -1 for anything else (a config error at load).
int recompute_segment(const std::string& text);

// docs/config.md, generated from the table.
std::string reference_markdown();

}  // namespace cohort::settings

// The trainer's namespace sees every setting by its old name (cohort::train::Config,
// train::TrainConfig, ...): the train and models modules, and programs and plugins written against
// cohort/train/config.hpp, use them unqualified or through cohort::train as before.
namespace cohort::train {
using namespace ::cohort::settings;  // NOLINT(google-build-using-namespace)
}  // namespace cohort::train
