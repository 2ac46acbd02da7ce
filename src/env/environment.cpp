#include "cohort/env/environment.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "cohort/error.hpp"

extern char** environ;

namespace cohort::env {

Environment Environment::from_process() {
  std::map<std::string, std::string> vars;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string text(*entry);
    const auto eq = text.find('=');
    if (eq == std::string::npos) continue;
    vars.emplace(text.substr(0, eq), text.substr(eq + 1));
  }
  return Environment(std::move(vars));
}

std::optional<std::string> Environment::get(const std::string& name) const {
  const auto it = vars_.find(name);
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

std::optional<long> Environment::get_int(const std::string& name, long min_value,
                                         long max_value) const {
  const auto value = get(name);
  if (!value) return std::nullopt;
  const char* begin = value->c_str();
  char* end = nullptr;
  errno = 0;
  const long parsed = std::strtol(begin, &end, 10);
  const bool whole =
      !value->empty() && end != nullptr && *end == '\0' && errno == 0 &&
      (std::isdigit(static_cast<unsigned char>(value->front())) || value->front() == '-');
  COHORT_CHECK(whole, EnvironmentError, "environment variable ", name, "='", *value,
               "' is not an integer");
  COHORT_CHECK(parsed >= min_value && parsed <= max_value, EnvironmentError,
               "environment variable ", name, "=", parsed, " is out of range [", min_value, ", ",
               max_value, "]");
  return parsed;
}

}  // namespace cohort::env
