#include "cohort/io/checksum.hpp"

#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "cohort/error.hpp"
#include "cohort/io/unique_fd.hpp"

namespace cohort::io {
namespace {

struct StateDeleter {
  void operator()(XXH3_state_t* state) const { XXH3_freeState(state); }
};

constexpr const char* kPrefix = "xxh3-64:";

}  // namespace

std::string format_checksum(std::uint64_t hash) {
  char text[32];
  std::snprintf(text, sizeof text, "%s%016llx", kPrefix, static_cast<unsigned long long>(hash));
  return text;
}

std::uint64_t parse_checksum(const std::string& text) {
  const std::string prefix = kPrefix;
  const bool hex = text.find_first_not_of("0123456789abcdef", prefix.size()) == std::string::npos;
  COHORT_CHECK(text.rfind(prefix, 0) == 0 && text.size() == prefix.size() + 16 && hex, IoError,
               "malformed checksum '", text, "'");
  return std::stoull(text.substr(prefix.size()), nullptr, 16);
}

std::string file_checksum(const std::string& path) {
  const UniqueFd file = UniqueFd::open_read_only(path);
  std::unique_ptr<XXH3_state_t, StateDeleter> state(XXH3_createState());
  COHORT_CHECK(state && XXH3_64bits_reset(state.get()) == XXH_OK, IoError,
               "xxhash: cannot allocate its state");
  std::vector<char> buffer(4u << 20);
  for (;;) {
    const ssize_t got = ::read(file.get(), buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    COHORT_CHECK(got >= 0, IoError, path, ": read failed: ", std::strerror(errno));
    if (got == 0) break;
    XXH3_64bits_update(state.get(), buffer.data(), static_cast<std::size_t>(got));
  }
  return format_checksum(XXH3_64bits_digest(state.get()));
}

}  // namespace cohort::io
