// How the key table binds a key to its TrainConfig field: COHORT_KEY(section, key) names the
// section and key and the field &TrainConfig::section.key, so a key is its field's name and a
// misspelt one does not compile. Each field type has one parse from the key's validated text.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "cohort/settings/config.hpp"

namespace cohort::settings::detail {

// The index of `text` among spec.choices ("a|b|c"); the text was validated against them.
int choice_index(const KeySpec& spec, const std::string& text);

inline void parse_field(std::int64_t& out, const KeySpec&, const std::string& text) {
  out = std::strtoll(text.c_str(), nullptr, 10);
}
inline void parse_field(double& out, const KeySpec&, const std::string& text) {
  out = std::strtod(text.c_str(), nullptr);
}
inline void parse_field(bool& out, const KeySpec&, const std::string& text) {
  out = text == "true";
}
inline void parse_field(std::string& out, const KeySpec&, const std::string& text) { out = text; }
inline void parse_field(std::vector<std::int64_t>& out, const KeySpec&, const std::string& text) {
  out.clear();
  std::istringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    out.push_back(std::strtoll(item.c_str(), nullptr, 10));
  }
}
inline void parse_field(std::vector<double>& out, const KeySpec&, const std::string& text) {
  out.clear();
  std::istringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    out.push_back(std::strtod(item.c_str(), nullptr));
  }
}
template <typename Enum, typename = std::enable_if_t<std::is_enum_v<Enum>>>
void parse_field(Enum& out, const KeySpec& spec, const std::string& text) {
  out = static_cast<Enum>(choice_index(spec, text));
}

template <auto Section, auto Member>
FieldRef bind() {
  return {[](TrainConfig& c, const KeySpec& spec, const std::string& text) {
            parse_field(c.*Section.*Member, spec, text);
          },
          [](const TrainConfig& c) -> const void* { return &(c.*Section.*Member); }};
}

}  // namespace cohort::settings::detail

#define COHORT_KEY(section, key)                                            \
#section, #key, ::cohort::settings::detail::bind < &TrainConfig::section, \
      &decltype(TrainConfig::section)::key>()
