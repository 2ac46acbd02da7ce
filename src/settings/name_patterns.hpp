// The settings that select parameters by name (model.freeze, model.init_skip, optim.lr_scale,
// model.init_prefix_map), parsed and checked without LibTorch, so that `cohort config check`
// (the light executable) validates them as `cohort train` does.
//
// Their patterns are RE2's (linear time in the name, no backtracking, and parsed, compiled and
// freed with explicit stacks rather than recursion; the text is bounded to kMaxPatternBytes and
// the compiled program to kMaxPatternMemory), so a deeply nested or adversarial pattern from a
// config is matched or refused in one line, never a stack overflow or an exponential match. RE2
// keeps Perl's syntax for what names need (classes, anchors, alternation, repetition) and has no
// backreferences or lookaround.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace re2 {
class RE2;
}

namespace cohort::settings {

constexpr std::size_t kMaxPatternBytes = 4096;       // a pattern's text
constexpr std::int64_t kMaxPatternMemory = 8 << 20;  // its compiled program (RE2's default)

// Why a pattern does not compile; empty when it does.
std::string regex_problem(const std::string& pattern);

// A compiled pattern; found_in() searches anywhere in a name, as std::regex_search did. A pattern
// that does not compile is a ConfigError naming `key` (settings are checked at load: this is the
// second line of defence).
class NamePattern {
 public:
  NamePattern(const std::string& pattern, const char* key);
  ~NamePattern();
  NamePattern(NamePattern&&) noexcept;
  NamePattern& operator=(NamePattern&&) noexcept;
  bool found_in(const std::string& name) const;

 private:
  std::unique_ptr<re2::RE2> re_;
};

// optim.lr_scale: "REGEX:FACTOR,..." (the factor after the last ':', >= 0).
std::string lr_scale_problem(const std::string& text);  // empty when well-formed
// ConfigError naming the key for a malformed item.
std::vector<std::pair<std::string, double>> parse_lr_scale(const std::string& text);

// model.init_prefix_map: "FROM:TO,...".
std::string prefix_map_problem(const std::string& text);  // empty when well-formed
std::vector<std::pair<std::string, std::string>> parse_prefix_map(const std::string& text);

}  // namespace cohort::settings
