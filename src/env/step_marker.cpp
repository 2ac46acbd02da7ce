#include "cohort/env/step_marker.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace cohort::env {

void mark_step_failed(int code) noexcept {
  const char* path = std::getenv(kStepFailedVariable);
  if (path == nullptr || *path == '\0' || code <= 0 || code > 255) return;
  // O_EXCL: the first rank's code stands; O_NOFOLLOW: never through a link someone put there.
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char text[4] = {static_cast<char>('0' + code / 100), static_cast<char>('0' + code / 10 % 10),
                  static_cast<char>('0' + code % 10), '\n'};
  [[maybe_unused]] const auto written = ::write(fd, text, sizeof text);
  ::close(fd);
}

std::optional<int> read_step_failed(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char text[4] = {};
  const auto n = ::read(fd, text, sizeof text);
  ::close(fd);
  if (n != sizeof text || text[3] != '\n') return std::nullopt;
  int code = 0;
  for (int i = 0; i < 3; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    code = code * 10 + (text[i] - '0');
  }
  if (code < 1 || code > 255) return std::nullopt;  // no exit code, let alone a failure's
  return code;
}

}  // namespace cohort::env
