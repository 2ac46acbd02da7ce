// A model's own settings: the keys of its own config section, declared by the model (a plugin's
// or a program's) with type, default, help and range, bound to the fields of its own options
// struct, and typed once at load like every built-in key.
//
// Protocol: a model registered with COHORT_REGISTER_MODEL(name, options, factory) owns the
// section [name]. Config::load validates that section's keys against the declaration (an
// unknown key or a bad value is a ConfigError naming the file and line, as for built-in keys),
// builds the options struct of the model that model.name selects, and puts it in
// ModelConfig::options; the factory receives it typed. docs/models.md, "C++ models".
//
//   struct TwoTowerOptions { std::int64_t depth = 2; double scale = 1; };
//   const auto options = cohort::settings::ModelOptions<TwoTowerOptions>()
//       .key("depth", &TwoTowerOptions::depth, "2", "layers per tower", 1, 64)
//       .key("scale", &TwoTowerOptions::scale, "1.0", "output scale");
//
// This header needs no LibTorch: the light `cohort` validates configs with it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "cohort/settings/config.hpp"

namespace cohort::settings {

// The typed value of a key's validated canonical text (the same parse as the built-in keys').
void parse_key_text(std::int64_t& out, const std::string& text);
void parse_key_text(double& out, const std::string& text);
void parse_key_text(bool& out, const std::string& text);
void parse_key_text(std::string& out, const std::string& text);
void parse_key_text(std::vector<std::int64_t>& out, const std::string& text);
void parse_key_text(std::vector<double>& out, const std::string& text);

// One key of a model's section: its spec (section filled in at registration) and where its value
// lands in the options object.
struct ModelOptionKey {
  KeySpec spec;
  std::function<void(void* options, const std::string& text)> set;
};

// A model's section, type-erased: the keys, and a maker of the options object at its defaults.
struct ModelOptionsTable {
  std::vector<ModelOptionKey> keys;
  std::function<std::shared_ptr<void>()> make;
};

namespace detail {
template <typename Field>
constexpr KeyType key_type_of() {
  if constexpr (std::is_same_v<Field, std::int64_t>) return KeyType::kInt;
  if constexpr (std::is_same_v<Field, double>) return KeyType::kFloat;
  if constexpr (std::is_same_v<Field, bool>) return KeyType::kBool;
  if constexpr (std::is_same_v<Field, std::string>) return KeyType::kString;
  if constexpr (std::is_same_v<Field, std::vector<std::int64_t>>) return KeyType::kIntList;
  if constexpr (std::is_same_v<Field, std::vector<double>>) return KeyType::kFloatList;
}
}  // namespace detail

// Builds a ModelOptionsTable for the struct Options (default-constructible, copyable). The
// strings are the plugin's literals: they live as long as the library, which is never unloaded.
template <typename Options>
class ModelOptions {
 public:
  ModelOptions() {
    table_.make = [] { return std::make_shared<Options>(); };
  }
  // A key of type int64 (kInt), double (kFloat), bool, std::string, or a vector of int64 or
  // double (comma-separated lists); min..max bound numbers and each list item.
  template <typename Field>
  ModelOptions& key(const char* name, Field Options::*field, const char* default_value,
                    const char* help, double min = -kNoLimit, double max = kNoLimit) {
    static_assert(std::is_same_v<Field, std::int64_t> || std::is_same_v<Field, double> ||
                      std::is_same_v<Field, bool> || std::is_same_v<Field, std::string> ||
                      std::is_same_v<Field, std::vector<std::int64_t>> ||
                      std::is_same_v<Field, std::vector<double>>,
                  "a model option is int64, double, bool, string, or a list of int64 or double");
    add({"", name, {}, detail::key_type_of<Field>(), default_value, help, "", min, max}, field);
    return *this;
  }
  // A string key whose value is one of choices ("a|b|c").
  ModelOptions& choice(const char* name, std::string Options::*field, const char* choices,
                       const char* default_value, const char* help) {
    add({"", name, {}, KeyType::kChoice, default_value, help, choices}, field);
    return *this;
  }
  const ModelOptionsTable& table() const { return table_; }

 private:
  template <typename Field>
  void add(const KeySpec& spec, Field Options::*field) {
    table_.keys.push_back({spec, [field](void* options, const std::string& text) {
                             parse_key_text(static_cast<Options*>(options)->*field, text);
                           }});
  }
  ModelOptionsTable table_;
};

}  // namespace cohort::settings
