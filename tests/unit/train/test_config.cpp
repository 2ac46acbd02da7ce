#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "cohort/env/environment.hpp"
#include "cohort/error.hpp"
#include "cohort/train/config.hpp"
#include "cohort/train/trainer.hpp"

using cohort::train::Config;

namespace {

// A config file in the temp directory, removed afterwards.
struct IniFile {
  std::string path;
  explicit IniFile(const std::string& text) {
    path = "/tmp/cohort-config-test-" + std::to_string(::getpid()) + ".ini";
    std::ofstream(path) << text;
  }
  ~IniFile() { std::remove(path.c_str()); }
};

// The ConfigError message of loading text with overrides ("" when it loads).
std::string error_of(const std::string& text, std::vector<std::string> overrides = {}) {
  IniFile file(text);
  try {
    Config::load(file.path, overrides);
  } catch (const cohort::ConfigError& error) {
    std::string message = error.what();
    if (message.rfind(file.path, 0) == 0) message.replace(0, file.path.size(), "FILE");
    return message;
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(train_config)

BOOST_AUTO_TEST_CASE(defaults_file_values_and_overrides_in_that_order) {
  IniFile file(
      "# a comment\n[model]\nname = cnn\nhidden = 128, 64\n\n[optim]\nlr = 0.05\nnesterov = yes\n");
  const auto config = Config::load(file.path, {"optim.lr=0.2", "data.batch_size = 32"});
  BOOST_TEST(config.model.name == "cnn");
  BOOST_TEST(config.model.hidden == (std::vector<std::int64_t>{128, 64}),
             boost::test_tools::per_element());
  BOOST_TEST(config.optim.lr == 0.2);  // --set wins over the file
  BOOST_TEST(config.optim.nesterov);
  BOOST_TEST(config.data.batch_size == 32);
  BOOST_TEST(config.optim.momentum == 0.9);  // a default
  BOOST_TEST(config.checkpoint_dir() == "runs/latest/checkpoints");
}

BOOST_AUTO_TEST_CASE(an_unknown_key_names_file_line_and_the_nearest_key) {
  BOOST_TEST(error_of("[optim]\nlr = 0.1\nmomentun = 0.8\n") ==
             "FILE:3: optim.momentun: unknown key; did you mean 'optim.momentum'?");
  BOOST_TEST(error_of("[modle]\nname = mlp\n") ==
             "FILE:2: modle.name: unknown key; did you mean 'model.name'?");
  BOOST_TEST(error_of("", {"train.epoch=3"}) ==
             "--set train.epoch: unknown key; did you mean 'train.epochs'?");
}

BOOST_AUTO_TEST_CASE(a_bad_value_names_file_line_key_and_what_was_expected) {
  BOOST_TEST(error_of("[data]\n\nbatch_size = lots\n") ==
             "FILE:3: data.batch_size: 'lots' is not an integer");
  BOOST_TEST(error_of("[optim]\nname = adam\n") ==
             "FILE:2: optim.name: 'adam' is not one of sgd|adamw");
  BOOST_TEST(error_of("[optim]\nlr = nan\n") == "FILE:2: optim.lr: 'nan' is not a number");
  BOOST_TEST(error_of("[data]\nshuffle = maybe\n") ==
             "FILE:2: data.shuffle: 'maybe' is not a boolean (true/false)");
  BOOST_TEST(error_of("[model]\nhidden = 64,x\n") ==
             "FILE:2: model.hidden: '64,x' is not a comma-separated list of integers");
  BOOST_TEST(error_of("", {"optim.lr"}) == "--set 'optim.lr': expected section.key=value");
}

BOOST_AUTO_TEST_CASE(the_resolved_file_loads_back_to_the_same_hash) {
  const auto config = Config::load("", {"model.name=gpt", "optim.lr=3e-4"});
  IniFile resolved(config.resolved_ini());
  const auto again = Config::load(resolved.path);
  BOOST_TEST(again.hash() == config.hash());
  BOOST_TEST(again.model.name == "gpt");
  BOOST_TEST(Config::load("", {"optim.lr=3e-3"}).hash() != config.hash());
  BOOST_TEST(config.hash().rfind("xxh3-64:", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(a_missing_file_is_a_config_error) {
  BOOST_CHECK_THROW(Config::load("/nonexistent/cohort.ini"), cohort::ConfigError);
}

BOOST_AUTO_TEST_CASE(a_broken_rule_between_keys_names_where_its_key_was_set) {
  BOOST_TEST(error_of("[optim]\nmomentum = 0\nnesterov = true\n") ==
             "FILE:3: optim.nesterov: needs optim.momentum > 0");
  BOOST_TEST(error_of("[optim]\nnesterov = true\n", {"optim.momentum=0"}) ==
             "FILE:2: optim.nesterov: needs optim.momentum > 0");
  BOOST_TEST(error_of("[parallel]\npipeline_stages = 2\nmicro_batches = 3\n") ==
             "FILE:3: parallel.micro_batches: data.batch_size = 64 is not divisible by "
             "parallel.micro_batches = 3");
  BOOST_TEST(error_of("", {"parallel.pipeline_stages=2", "optim.accumulation=2"}) ==
             "--set optim.accumulation: must be 1 with pipeline stages (use "
             "parallel.micro_batches)");
  BOOST_TEST(error_of("", {"parallel.partition=1,2,3"}) ==
             "--set parallel.partition: has 3 entries for parallel.pipeline_stages = 1");
  BOOST_TEST(error_of("[model]\nname = gpt\nwidth = 30\n") ==
             "model.heads (default 4): model.width 30 is not divisible by model.heads 4");
  BOOST_TEST(
      error_of("", {"slurm.signals=USR1,BOGUS"}) ==
      "--set slurm.signals: unknown signal 'BOGUS' (USR1, USR2, TERM, INT, HUP, QUIT, XCPU)");
  BOOST_TEST(error_of("[monitor]\nhttp_bind = a,b\n") ==
             "FILE:2: monitor.http_bind: 'a,b' is not one host name or address");
  BOOST_TEST(error_of("", {"optim.lr=0"}) == "--set optim.lr: must be > 0");
  BOOST_TEST(error_of("[model]\nname = mlp\nwidth = 30\n").empty());  // heads: gpt only
}

BOOST_AUTO_TEST_CASE(every_choice_enum_follows_its_keys_choices) {
  namespace t = cohort::train;
  BOOST_TEST(t::to_string(t::Optimizer::kSgd) == "sgd");
  BOOST_TEST(t::to_string(t::Optimizer::kAdamw) == "adamw");
  BOOST_TEST(t::to_string(t::LrScheduleKind::kConstant) == "constant");
  BOOST_TEST(t::to_string(t::LrScheduleKind::kStep) == "step");
  BOOST_TEST(t::to_string(t::LrScheduleKind::kCosine) == "cosine");
  BOOST_TEST(t::to_string(t::TargetMetric::kNone) == "none");
  BOOST_TEST(t::to_string(t::TargetMetric::kAccuracy) == "accuracy");
  BOOST_TEST(t::to_string(t::TargetMetric::kLoss) == "loss");
  BOOST_TEST(t::to_string(t::TargetMetric::kPerplexity) == "perplexity");
  BOOST_TEST(t::to_string(t::Precision::kFp32) == "fp32");
  BOOST_TEST(t::to_string(t::Precision::kBf16) == "bf16");
  BOOST_TEST(t::to_string(t::IoDriver::kPosix) == "posix");
  BOOST_TEST(t::to_string(t::IoDriver::kMpio) == "mpio");
  BOOST_TEST(t::to_string(t::GradBackend::kMpi) == "mpi");
  BOOST_TEST(t::to_string(t::GradBackend::kNccl) == "nccl");
  BOOST_TEST(t::to_string(t::PipelineSchedule::k1f1b) == "1f1b");
  BOOST_TEST(t::to_string(t::PipelineSchedule::kGpipe) == "gpipe");
  BOOST_TEST(t::to_string(t::ConsoleMode::kAuto) == "auto");
  BOOST_TEST(t::to_string(t::ConsoleMode::kBar) == "bar");
  BOOST_TEST(t::to_string(t::ConsoleMode::kLines) == "lines");
  const auto config = Config::load("", {"optim.name=adamw", "parallel.schedule=gpipe",
                                        "monitor.console=lines", "optim.schedule=cosine"});
  BOOST_TEST((config.optim.name == t::Optimizer::kAdamw));
  BOOST_TEST((config.parallel.schedule == t::PipelineSchedule::kGpipe));
  BOOST_TEST((config.monitor.console == t::ConsoleMode::kLines));
  BOOST_TEST((config.optim.schedule == t::LrScheduleKind::kCosine));
}

// SLURM_CPUS_PER_TASK is read through env::Environment: a count is used (within the node's
// cores), anything else is an environment error rather than silently ignored.
BOOST_AUTO_TEST_CASE(threads_per_rank_reads_slurm_cpus_per_task_from_the_environment) {
  using Vars = std::map<std::string, std::string>;
  const auto env_of = [](Vars vars) { return cohort::env::Environment(std::move(vars)); };
  BOOST_TEST(cohort::train::threads_per_rank(0, 1, env_of(Vars{{"SLURM_CPUS_PER_TASK", "1"}})) ==
             1);
  BOOST_TEST(cohort::train::threads_per_rank(1, 1, env_of(Vars{{"SLURM_CPUS_PER_TASK", "x"}})) ==
             1);  // train.threads wins; the variable is not read
  for (const char* bad : {"x", "0", "-2", "1e3", ""}) {
    BOOST_CHECK_THROW(
        cohort::train::threads_per_rank(0, 1, env_of(Vars{{"SLURM_CPUS_PER_TASK", bad}})),
        cohort::EnvironmentError);
  }
}

BOOST_AUTO_TEST_SUITE_END()
