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

}  // namespace cohort::env
