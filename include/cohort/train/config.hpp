// Config: the trainer's settings, one typed table (section, key, type, default, help) read from an
// INI file with Boost.Program_options and overridden by `--set section.key=value`.
//
// Protocol: Config::load(file, overrides) validates everything up front: an unknown key names the
// file, the line and the nearest valid key; a bad value names the file, line, key and the
// expected type or choices (exit code 2). Every key then has a value (its default when not
// given); resolved_ini() writes them all, and hash() identifies that resolved text (checkpoints
// record it). The table is also the reference page, docs/config.md (reference_markdown()).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace cohort::train {

enum class KeyType { kInt, kFloat, kBool, kString, kChoice, kIntList };

// No bound on that side of a key's range.
inline constexpr double kNoLimit = std::numeric_limits<double>::infinity();

struct KeySpec {
  const char* section;
  const char* key;
  KeyType type;
  const char* default_value;
  const char* help;
  const char* choices = "";  // kChoice: "a|b|c"
  // kInt, kFloat and each item of kIntList: the closed range a value must lie in, checked at load
  // (a negative epoch count, a dropout of 2 or a zero width are config errors, not crashes).
  double min = -kNoLimit;
  double max = kNoLimit;
};

// The sections, in file order, and every key.
const std::vector<std::string>& config_sections();
const std::vector<KeySpec>& config_table();

class Config {
 public:
  // file may be empty (defaults and overrides only). Throws ConfigError.
  static Config load(const std::string& file, const std::vector<std::string>& overrides = {});

  std::int64_t get_int(const std::string& name) const;  // name: "section.key"
  double get_float(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;  // strings and choices
  std::vector<std::int64_t> get_int_list(const std::string& name) const;

  std::string resolved_ini() const;  // every key, table order, with a header comment
  std::string hash() const;          // "xxh3-64:..." of resolved_ini()'s key lines

 private:
  const KeySpec& spec(const std::string& name, KeyType expected) const;
  std::map<std::string, std::string> values_;  // "section.key" -> text, validated
};

// docs/config.md, generated from the table.
std::string reference_markdown();

}  // namespace cohort::train
