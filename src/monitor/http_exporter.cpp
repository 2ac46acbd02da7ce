#include "cohort/monitor/http_exporter.hpp"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cohort/config.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/error.hpp"
#include "cohort/io/unique_fd.hpp"

extern char** environ;

namespace cohort::monitor {
namespace {

// COHORT_EXPORTER, else next to the running executable, else the install prefix, else PATH.
std::string exporter_path() {
  if (auto set = env::Environment::from_process().get("COHORT_EXPORTER")) return *set;
  std::error_code error;
  if (const auto self = env::executable_path()) {
    const auto near = std::filesystem::path(*self).parent_path() / "cohort-exporter";
    if (std::filesystem::exists(near, error)) return near.string();
  }
  const std::string installed = std::string(COHORT_INSTALL_BINDIR) + "/cohort-exporter";
  if (std::filesystem::exists(installed, error)) return installed;
  return "cohort-exporter";
}

// The exporter's first line, within `seconds`.
std::string first_line(int fd, int seconds) {
  std::string line;
  pollfd p{fd, POLLIN, 0};
  while (line.find('\n') == std::string::npos && poll(&p, 1, seconds * 1000) > 0) {
    char buffer[256];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    line.append(buffer, static_cast<std::size_t>(n));
  }
  return line.substr(0, line.find('\n'));
}

}  // namespace

struct HttpExporter::Impl {
  UniqueFd socket;
  pid_t child = -1;
  int port = 0;
  std::string pending;  // what the exporter has not taken yet
  bool stalled = false;
};

HttpExporter::HttpExporter(const std::string& bind, int port) : impl_(std::make_unique<Impl>()) {
  int fds[2];
  COHORT_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0, IoError,
               "monitor: socketpair: ", std::strerror(errno));
  impl_->socket = UniqueFd(fds[0]);
  UniqueFd theirs(fds[1]);
  const std::string path = exporter_path(), port_text = std::to_string(port);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, theirs.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, theirs.get(), STDOUT_FILENO);
  // Nothing else of the rank's (MPI's sockets and shared memory, the run's files) stays open in
  // the exporter.
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  std::vector<char*> argv = {const_cast<char*>(path.c_str()), const_cast<char*>(bind.c_str()),
                             const_cast<char*>(port_text.c_str()), nullptr};
  const int spawned =
      posix_spawnp(&impl_->child, path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  theirs.reset();
  COHORT_CHECK(spawned == 0, ConfigError, "monitor.http_port: cannot start ", path, ": ",
               std::strerror(spawned));
  const std::string answer = first_line(impl_->socket.get(), 10);
  if (answer.rfind("listening ", 0) == 0) {
    impl_->port = std::atoi(answer.c_str() + 10);
    ::fcntl(impl_->socket.get(), F_SETFL, O_NONBLOCK);  // a stuck exporter never blocks training
    return;
  }
  impl_->socket.reset();
  ::kill(impl_->child, SIGTERM);
  ::waitpid(impl_->child, nullptr, 0);
  impl_->child = -1;
  COHORT_THROW(ConfigError, "monitor.http_port: cannot serve /metrics on ", bind, ":", port, ": ",
               answer.rfind("error ", 0) == 0 ? answer.substr(6) : "no answer from " + path);
}

HttpExporter::~HttpExporter() {
  impl_->socket.reset();  // end of input: the exporter exits
  if (impl_->child > 0) {
    for (int i = 0; i < 50 && ::waitpid(impl_->child, nullptr, WNOHANG) == 0; ++i) ::usleep(20000);
    if (::waitpid(impl_->child, nullptr, WNOHANG) == 0) {
      ::kill(impl_->child, SIGKILL);
      ::waitpid(impl_->child, nullptr, 0);
    }
  }
}

int HttpExporter::port() const { return impl_->port; }

void HttpExporter::update(const std::vector<MetricSample>& samples) {
  if (impl_->stalled) return;
  nlohmann::json gauges = nlohmann::json::array();
  for (const auto& s : samples) {
    gauges.push_back({{"n", s.name}, {"h", s.help}, {"l", s.labels}, {"v", s.value}});
  }
  // An update that does not fit waits for the next one (never half a line).
  if (impl_->pending.empty()) impl_->pending = gauges.dump() + "\n";
  while (!impl_->pending.empty()) {
    const ssize_t n =
        ::send(impl_->socket.get(), impl_->pending.data(), impl_->pending.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      // The exporter is gone (EPIPE) or far behind: stop feeding it; training goes on.
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) impl_->stalled = true;
      if (impl_->pending.size() > (1u << 20)) impl_->stalled = true;
      return;
    }
    impl_->pending.erase(0, static_cast<std::size_t>(n));
  }
}

}  // namespace cohort::monitor
