// Bounds for JSON read from outside (manifests, metrics.jsonl, topology files), checked on the
// text before nlohmann::json builds anything: nesting that deep is never a Cohort file, and an
// unbounded one costs memory and stack in the parser and in every recursive walk after it.
#pragma once

#include <cstddef>
#include <string_view>

namespace cohort::json_limits {

// Deeper than any file Cohort writes (a manifest is 4 levels deep) by a wide margin.
inline constexpr int kMaxDepth = 64;

// The deepest nesting of arrays and objects in `text` (brackets inside strings do not count).
inline int nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

inline bool within_depth(std::string_view text, int limit = kMaxDepth) {
  return nesting_depth(text) <= limit;
}

}  // namespace cohort::json_limits
