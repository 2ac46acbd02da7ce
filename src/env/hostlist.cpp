#include "cohort/env/hostlist.hpp"

#include <slurm/slurm.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "cohort/error.hpp"
#include "common/checked_math.hpp"

namespace cohort::env {
namespace {

// RAII over libslurm's hostlist. Slurm 23.11 turned `hostlist_t` from a pointer typedef into the
// struct itself (the functions now take `hostlist_t *`); the pointee is taken from what
// slurm_hostlist_create returns, which is `struct hostlist *` in every release.
using HostlistStruct = std::remove_pointer_t<decltype(slurm_hostlist_create(nullptr))>;
struct HostlistDeleter {
  void operator()(HostlistStruct* list) const noexcept { slurm_hostlist_destroy(list); }
};
using Hostlist = std::unique_ptr<HostlistStruct, HostlistDeleter>;

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

// How many hosts `text` names, counted from its bracket ranges without expanding them, so that
// an expression naming too many is refused before libslurm expands or logs anything; nullopt
// when a range is not plain digits (libslurm then decides). Each comma-separated item names the
// product of its bracket groups' range sizes.
std::optional<std::int64_t> count_hosts(const std::string& text) {
  std::int64_t total = 0, item = 1, group = 0, low = -1;
  std::int64_t number = -1;
  bool in_bracket = false;
  for (const char c : text + ",") {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      const auto next = number < 0 ? std::optional<std::int64_t>(c - '0')
                                   : checked::add(*checked::mul(number, 10), c - '0');
      if (!next || *next > (std::int64_t{1} << 40)) return std::nullopt;
      number = *next;
      continue;
    }
    if (in_bracket && c == '-') {
      low = number;
    } else if (in_bracket && (c == ',' || c == ']')) {
      if (number < 0) return std::nullopt;
      const std::int64_t size = low < 0 ? 1 : number - low + 1;
      if (size < 1) return std::nullopt;
      group += size;
      low = -1;
      if (c == ']') {
        in_bracket = false;
        const auto product = checked::mul(item, group);
        if (!product || *product > kMaxHostlistHosts) return product.value_or(INT64_MAX);
        item = *product;
      }
    } else if (c == '[') {
      in_bracket = true;
      group = 0;
    } else if (c == ',') {
      total += item;  // item, total <= kMaxHostlistHosts each: no overflow
      if (total > kMaxHostlistHosts) return total;
      item = 1;
    }
    number = -1;
  }
  return total;
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& expression, const std::string& origin) {
  COHORT_CHECK(plausible_hostlist(expression), EnvironmentError, origin, "='", expression,
               "' is not a valid hostlist");
  const auto named = count_hosts(expression);
  COHORT_CHECK(!named || *named <= kMaxHostlistHosts, EnvironmentError, origin, "='", expression,
               "' names more than the limit of ", kMaxHostlistHosts, " hosts");
  Hostlist list(slurm_hostlist_create(expression.c_str()));
  COHORT_CHECK(list != nullptr, EnvironmentError, origin, "='", expression,
               "' is not a valid hostlist (slurm_hostlist_create failed)");
  // libslurm keeps ranges unexpanded: count first, so that "n[0-999999999]" (19 bytes) is
  // refused before it becomes a billion strings.
  const int count = slurm_hostlist_count(list.get());
  COHORT_CHECK(count >= 1 && count <= kMaxHostlistHosts, EnvironmentError, origin, "='", expression,
               "' names ", count, " hosts, more than the limit of ", kMaxHostlistHosts);
  std::vector<std::string> hosts;
  hosts.reserve(static_cast<size_t>(count));
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
  // slurm_hostlist_ranged_string is in every release (the _malloc variant left in 23.11); it
  // returns -1 when the text does not fit, so the buffer grows until it does.
  std::vector<char> text(1024);
  while (slurm_hostlist_ranged_string(list.get(), text.size(), text.data()) < 0) {
    COHORT_CHECK(text.size() < (std::size_t{1} << 30), SlurmError,
                 "slurm_hostlist_ranged_string: the list does not fit in 1 GiB");
    text.resize(text.size() * 2);
  }
  return text.data();
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
    if (count < 1 || repeat < 1 ||
        counts.size() + static_cast<size_t>(repeat) > static_cast<size_t>(kMaxHostlistHosts))
      fail();
    counts.insert(counts.end(), static_cast<size_t>(repeat), static_cast<int>(count));
    if (pos == value.size()) break;
    if (value[pos] != ',') fail();
    ++pos;
  }
  return counts;
}

}  // namespace cohort::env
