#include "cohort/env/hostlist.hpp"

#include <slurm/slurm.h>

#include <cctype>
#include <cstdlib>
#include <memory>

#include "cohort/error.hpp"

namespace cohort::env {
namespace {

// RAII over libslurm's hostlist_t.
struct HostlistDeleter {
  void operator()(hostlist_t list) const noexcept { slurm_hostlist_destroy(list); }
};
using Hostlist = std::unique_ptr<std::remove_pointer_t<hostlist_t>, HostlistDeleter>;

struct FreeDeleter {
  void operator()(char* text) const noexcept { std::free(text); }
};
using CString = std::unique_ptr<char, FreeDeleter>;

// Characters Slurm accepts in a hostlist expression; anything else is a malformed value that
// libslurm would otherwise take as a literal host name.
bool plausible_hostlist(const std::string& text) {
  int depth = 0;
  for (const char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0 || depth > 1) return false;
    if (std::isspace(static_cast<unsigned char>(c)) || c == '"' || c == '\'') return false;
  }
  return depth == 0 && !text.empty() && text.front() != ',' && text.back() != ',';
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& expression, const std::string& origin) {
  COHORT_CHECK(plausible_hostlist(expression), EnvironmentError, origin, "='", expression,
               "' is not a valid hostlist");
  Hostlist list(slurm_hostlist_create(expression.c_str()));
  COHORT_CHECK(list != nullptr, EnvironmentError, origin, "='", expression,
               "' is not a valid hostlist (slurm_hostlist_create failed)");
  std::vector<std::string> hosts;
  hosts.reserve(static_cast<size_t>(slurm_hostlist_count(list.get())));
  while (CString host{slurm_hostlist_shift(list.get())}) hosts.emplace_back(host.get());
  COHORT_CHECK(!hosts.empty(), EnvironmentError, origin, "='", expression, "' names no host");
  return hosts;
}

std::string compress_hostlist(const std::vector<std::string>& hosts) {
  if (hosts.empty()) return "";
  Hostlist list(slurm_hostlist_create(nullptr));
  COHORT_CHECK(list != nullptr, SlurmError, "slurm_hostlist_create(NULL) failed");
  for (const auto& host : hosts) {
    COHORT_CHECK(slurm_hostlist_push_host(list.get(), host.c_str()) == 1, SlurmError,
                 "slurm_hostlist_push_host(", host, ") failed");
  }
  CString text(slurm_hostlist_ranged_string_malloc(list.get()));
  COHORT_CHECK(text != nullptr, SlurmError, "slurm_hostlist_ranged_string_malloc failed");
  return text.get();
}

std::vector<int> expand_tasks_per_node(const std::string& value, const std::string& origin) {
  // Grammar: item (',' item)*, item = count | count '(x' repeat ')'.
  std::vector<int> counts;
  size_t pos = 0;
  auto fail = [&]() -> std::vector<int> {
    COHORT_THROW(EnvironmentError, origin, "='", value,
                 "' is not a tasks-per-node list like '2(x3),1'");
  };
  auto number = [&]() -> long {
    size_t digits = 0;
    while (pos + digits < value.size() &&
           std::isdigit(static_cast<unsigned char>(value[pos + digits])))
      ++digits;
    if (digits == 0 || digits > 9) fail();
    const long n = std::stol(value.substr(pos, digits));
    pos += digits;
    return n;
  };
  while (true) {
    const long count = number();
    long repeat = 1;
    if (value.compare(pos, 2, "(x") == 0) {
      pos += 2;
      repeat = number();
      if (pos >= value.size() || value[pos] != ')') fail();
      ++pos;
    }
    if (count < 1 || repeat < 1 || counts.size() + static_cast<size_t>(repeat) > 1000000) fail();
    counts.insert(counts.end(), static_cast<size_t>(repeat), static_cast<int>(count));
    if (pos == value.size()) break;
    if (value[pos] != ',') fail();
    ++pos;
  }
  return counts;
}

}  // namespace cohort::env
