#include "cohort/io/checksum.hpp"

#include <unistd.h>
#include <xxhash.h>
#if defined(__x86_64__)
// Debian's libxxhash (0.8.1 in 12, 0.8.3 in 13) also exports XXH3 built for AVX2 and AVX-512,
// picked at run time; the header renames the calls below to them. Its plain XXH3 is the SSE2
// one: 4x slower here, slower than the read it checks (docs/performance.md, checkpoint load).
#include <xxh_x86dispatch.h>
#endif

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

struct StreamingChecksum::State {
  std::unique_ptr<XXH3_state_t, StateDeleter> xxh{XXH3_createState()};
};

StreamingChecksum::StreamingChecksum() : state_(std::make_unique<State>()) {
  COHORT_CHECK(state_->xxh && XXH3_64bits_reset(state_->xxh.get()) == XXH_OK, IoError,
               "xxhash: cannot allocate its state");
}
StreamingChecksum::~StreamingChecksum() = default;

void StreamingChecksum::add(const void* data, std::size_t bytes) {
  XXH3_64bits_update(state_->xxh.get(), data, bytes);
}

std::string StreamingChecksum::result() const {
  return format_checksum(XXH3_64bits_digest(state_->xxh.get()));
}

std::string bytes_checksum(const void* data, std::size_t bytes) {
  return format_checksum(XXH3_64bits(data, bytes));
}

std::string format_checksum(std::uint64_t hash) {
  char text[32];
  std::snprintf(text, sizeof text, "%s%016llx", kPrefix, static_cast<unsigned long long>(hash));
  return text;
}

bool is_checksum(const std::string& text) {
  const std::string prefix = kPrefix;
  return text.rfind(prefix, 0) == 0 && text.size() == prefix.size() + 16 &&
         text.find_first_not_of("0123456789abcdef", prefix.size()) == std::string::npos;
}

std::uint64_t parse_checksum(const std::string& text) {
  COHORT_CHECK(is_checksum(text), IoError, "malformed checksum '", text, "'");
  return std::stoull(text.substr(std::string(kPrefix).size()), nullptr, 16);
}

std::string file_checksum(const std::string& path) {
  const UniqueFd file = UniqueFd::open_read_only(path);
  StreamingChecksum checksum;
  std::vector<char> buffer(4u << 20);
  for (;;) {
    const ssize_t got = ::read(file.get(), buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    COHORT_CHECK(got >= 0, IoError, path, ": read failed: ", std::strerror(errno));
    if (got == 0) break;
    checksum.add(buffer.data(), static_cast<std::size_t>(got));
  }
  return checksum.result();
}

}  // namespace cohort::io
