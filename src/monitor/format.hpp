// printf-style formatting of a few doubles into a std::string, for the monitor's sentences and
// frames (private to src/monitor/).
#pragma once

#include <cstdio>
#include <string>

#include "cohort/io/text.hpp"

namespace cohort::monitor {

// `pattern` takes up to three doubles; the result is cut at 200 characters.
inline std::string format(const char* pattern, double a, double b = 0, double c = 0) {
  char buffer[200];
  std::snprintf(buffer, sizeof buffer, pattern, a, b, c);
  return buffer;
}

}  // namespace cohort::monitor

// printable(): io/text.hpp, shared with every command that prints outside text.
namespace cohort::monitor {

using io::printable;

}  // namespace cohort::monitor
