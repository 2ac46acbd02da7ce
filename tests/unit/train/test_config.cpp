#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "cohort/error.hpp"
#include "cohort/train/config.hpp"

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
  BOOST_TEST(config.get_string("model.name") == "cnn");
  BOOST_TEST(config.get_int_list("model.hidden") == (std::vector<std::int64_t>{128, 64}),
             boost::test_tools::per_element());
  BOOST_TEST(config.get_float("optim.lr") == 0.2);  // --set wins over the file
  BOOST_TEST(config.get_bool("optim.nesterov"));
  BOOST_TEST(config.get_int("data.batch_size") == 32);
  BOOST_TEST(config.get_float("optim.momentum") == 0.9);  // a default
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
  BOOST_TEST(again.get_string("model.name") == "gpt");
  BOOST_TEST(Config::load("", {"optim.lr=3e-3"}).hash() != config.hash());
  BOOST_TEST(config.hash().rfind("xxh3-64:", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(a_missing_file_is_a_config_error) {
  BOOST_CHECK_THROW(Config::load("/nonexistent/cohort.ini"), cohort::ConfigError);
}

BOOST_AUTO_TEST_SUITE_END()
