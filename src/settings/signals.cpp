#include "settings/signals.hpp"

#include <csignal>
#include <map>
#include <sstream>

namespace cohort::settings {
namespace {

const std::map<std::string, int>& signal_names() {
  static const std::map<std::string, int> kNames = {
      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"INT", SIGINT},
      {"HUP", SIGHUP},   {"QUIT", SIGQUIT}, {"XCPU", SIGXCPU}};
  return kNames;
}

// Each non-empty item of the list with its signal number (0: no such signal).
std::vector<std::pair<std::string, int>> items(const std::string& list) {
  std::vector<std::pair<std::string, int>> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) continue;
    const std::string name = item.rfind("SIG", 0) == 0 ? item.substr(3) : item;
    const auto it = signal_names().find(name);
    out.emplace_back(item, it == signal_names().end() ? 0 : it->second);
  }
  return out;
}

}  // namespace

std::string unknown_signal(const std::string& list) {
  for (const auto& [item, number] : items(list)) {
    if (number == 0) return item;
  }
  return "";
}

std::vector<int> parse_signals(const std::string& list) {
  std::vector<int> signals;
  for (const auto& item : items(list)) {
    if (item.second != 0) signals.push_back(item.second);
  }
  return signals;
}

std::string signal_name(int signal) {
  for (const auto& [name, number] : signal_names()) {
    if (number == signal) return "SIG" + name;
  }
  return "signal " + std::to_string(signal);
}

}  // namespace cohort::settings
