// Fuzz target: a trainer config file and `--set` overrides (Config::load). Whatever loads must
// hold every key in its type and range, and keep every rule between keys.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cohort/train/config.hpp"
#include "fuzz_contract.hpp"

namespace train = cohort::train;

namespace {

const std::string& config_file() {
  static const std::string path = std::filesystem::temp_directory_path().string() +
                                  "/cohort-fuzz-config-" + std::to_string(::getpid()) + ".ini";
  return path;
}

template <typename T>
const T& field(const train::Config& config, const train::KeySpec& spec) {
  return *static_cast<const T*>(spec.ref.field(config));
}

bool in_range(double v, const train::KeySpec& spec) { return v >= spec.min && v <= spec.max; }

// Every typed field checked against its key's range, and every rule between keys holds.
void read_every_key(const train::Config& config) {
  for (const auto& spec : train::config_table()) {
    switch (spec.type) {
      case train::KeyType::kInt:
        if (!in_range(static_cast<double>(field<std::int64_t>(config, spec)), spec)) std::abort();
        break;
      case train::KeyType::kFloat:
        if (!in_range(field<double>(config, spec), spec)) std::abort();
        break;
      case train::KeyType::kIntList:
        for (const auto v : field<std::vector<std::int64_t>>(config, spec)) {
          if (!in_range(static_cast<double>(v), spec)) std::abort();
        }
        break;
      case train::KeyType::kFloatList:
        for (const auto v : field<std::vector<double>>(config, spec)) {
          if (!in_range(v, spec)) std::abort();
        }
        break;
      default:
        break;
    }
  }
  for (const auto& rule : train::config_rules()) {
    if (!rule.problem(config).empty()) std::abort();
  }
  (void)config.hash();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  {
    std::ofstream out(config_file(), std::ios::binary | std::ios::trunc);
    out << text;
  }
  cohort::fuzz::expect_contract([&] { read_every_key(train::Config::load(config_file())); });
  std::vector<std::string> overrides;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line) && overrides.size() < 64;) {
    overrides.push_back(line);
  }
  cohort::fuzz::expect_contract([&] { read_every_key(train::Config::load("", overrides)); });
  return 0;
}
