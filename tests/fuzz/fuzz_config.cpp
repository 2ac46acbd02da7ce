// Fuzz target: a trainer config file and `--set` overrides (Config::load). Whatever loads must
// give every key back in its type and range: the typed getters never throw after a load.
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

// Every key read back through its typed getter, checked against its range.
void read_every_key(const train::Config& config) {
  for (const auto& spec : train::config_table()) {
    const std::string name = std::string(spec.section) + "." + spec.key;
    switch (spec.type) {
      case train::KeyType::kInt: {
        const auto v = static_cast<double>(config.get_int(name));
        if (v < spec.min || v > spec.max) std::abort();
        break;
      }
      case train::KeyType::kFloat: {
        const double v = config.get_float(name);
        if (!(v >= spec.min && v <= spec.max)) std::abort();
        break;
      }
      case train::KeyType::kBool:
        config.get_bool(name);
        break;
      case train::KeyType::kIntList:
        for (const auto v : config.get_int_list(name)) {
          if (static_cast<double>(v) < spec.min || static_cast<double>(v) > spec.max) std::abort();
        }
        break;
      default:
        config.get_string(name);
    }
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
