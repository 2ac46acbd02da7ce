// Environment: an immutable map of environment variables. Production code reads the process
// environment once through from_process(); tests build one from a literal map, so that launcher
// detection is a pure function of it.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace cohort::env {

class Environment {
 public:
  Environment() = default;
  explicit Environment(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {}

  // A snapshot of this process's environment.
  static Environment from_process();

  bool has(const std::string& name) const { return vars_.count(name) != 0; }
  std::optional<std::string> get(const std::string& name) const;

  // Integer value of `name`, or nullopt when unset. A value that is not a whole decimal number
  // within [min_value, max_value] throws EnvironmentError naming the variable and the value.
  std::optional<long> get_int(const std::string& name, long min_value = 0,
                              long max_value = 1L << 40) const;

  const std::map<std::string, std::string>& vars() const { return vars_; }

 private:
  std::map<std::string, std::string> vars_;
};

}  // namespace cohort::env
