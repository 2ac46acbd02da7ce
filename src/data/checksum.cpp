#include "cohort/data/checksum.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "cohort/error.hpp"
#include "common/unique_fd.hpp"

namespace cohort::data {
namespace {

struct StateDeleter {
  void operator()(XXH3_state_t* state) const { XXH3_freeState(state); }
};

}  // namespace

std::string format_checksum(std::uint64_t hash) {
  char text[32];
  std::snprintf(text, sizeof text, "xxh3-64:%016llx", static_cast<unsigned long long>(hash));
  return text;
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

std::int64_t file_bytes(const std::string& path) {
  std::error_code error;
  const auto bytes = std::filesystem::file_size(path, error);
  COHORT_CHECK(!error, IoError, path, ": ", error.message());
  return static_cast<std::int64_t>(bytes);
}

void make_directories(const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  COHORT_CHECK(!error, IoError, path, ": cannot create directory: ", error.message());
}

}  // namespace cohort::data
