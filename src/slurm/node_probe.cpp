#include "cohort/slurm/node_probe.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <thread>

#include "cohort/io/unique_fd.hpp"

namespace cohort::slurm {
namespace {

// Connections open at once: far below the usual 1024 descriptors of a process.
constexpr std::size_t kBatch = 256;

enum class Outcome { kPending, kAnswered, kFailed, kUnknown };

struct Attempt {
  UniqueFd fd;
  Outcome outcome = Outcome::kUnknown;
};

// The errors that say the node (or the way to it) is gone; any other is this side's problem.
Outcome outcome_of(int error) {
  switch (error) {
    case 0:
      return Outcome::kAnswered;
    case ECONNREFUSED:
    case ECONNRESET:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case EHOSTDOWN:
    case ETIMEDOUT:
      return Outcome::kFailed;
    default:
      return Outcome::kUnknown;
  }
}

struct AddrInfoFree {
  void operator()(addrinfo* list) const noexcept { freeaddrinfo(list); }
};

// Starts a non-blocking connection; its outcome when known at once, else kPending with the socket.
Attempt start(const Endpoint& endpoint) {
  if (endpoint.port == 0 || endpoint.address.empty()) return {};
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* raw = nullptr;
  const std::string port = std::to_string(endpoint.port);
  if (getaddrinfo(endpoint.address.c_str(), port.c_str(), &hints, &raw) != 0 || raw == nullptr) {
    return {};
  }
  const std::unique_ptr<addrinfo, AddrInfoFree> list(raw);
  Attempt attempt{UniqueFd(::socket(raw->ai_family, raw->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                                    raw->ai_protocol)),
                  Outcome::kPending};
  if (attempt.fd.get() < 0) return {};
  if (::connect(attempt.fd.get(), raw->ai_addr, raw->ai_addrlen) == 0) {
    attempt.outcome = Outcome::kAnswered;
  } else if (errno != EINPROGRESS) {
    attempt.outcome = outcome_of(errno);
  }
  return attempt;
}

// One try over endpoints[first, last): the outcome of each, kFailed for those still silent at
// the deadline.
void try_batch(const std::vector<Endpoint>& endpoints, std::size_t first, std::size_t last,
               std::chrono::milliseconds timeout, std::vector<Outcome>& outcomes) {
  std::vector<Attempt> attempts;
  for (std::size_t i = first; i < last; ++i) attempts.push_back(start(endpoints[i]));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::vector<pollfd> waiting;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < attempts.size(); ++i) {
      if (attempts[i].outcome != Outcome::kPending) continue;
      waiting.push_back({attempts[i].fd.get(), POLLOUT, 0});
      which.push_back(i);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (waiting.empty() || left.count() <= 0) break;
    const int ready = ::poll(waiting.data(), waiting.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) break;
    for (std::size_t k = 0; ready > 0 && k < waiting.size(); ++k) {
      if (waiting[k].revents == 0) continue;
      int error = 0;
      socklen_t size = sizeof(error);
      if (::getsockopt(waiting[k].fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) error = errno;
      attempts[which[k]].outcome = outcome_of(error);
    }
  }
  for (std::size_t i = 0; i < attempts.size(); ++i) {
    const Outcome o = attempts[i].outcome;
    outcomes[first + i] = o == Outcome::kPending ? Outcome::kFailed : o;
  }
}

}  // namespace

std::vector<std::string> unreachable(const std::vector<Endpoint>& endpoints,
                                     const ProbeOptions& options) {
  std::vector<Endpoint> left = endpoints;
  for (int attempt = 0; attempt < std::max(1, options.tries) && !left.empty(); ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(options.pause);
    std::vector<Outcome> outcomes(left.size(), Outcome::kUnknown);
    for (std::size_t first = 0; first < left.size(); first += kBatch) {
      try_batch(left, first, std::min(left.size(), first + kBatch), options.timeout, outcomes);
    }
    std::vector<Endpoint> failed;
    for (std::size_t i = 0; i < left.size(); ++i) {
      if (outcomes[i] == Outcome::kFailed) failed.push_back(left[i]);
    }
    left = std::move(failed);
  }
  std::vector<std::string> nodes;
  for (const auto& endpoint : left) nodes.push_back(endpoint.node);
  return nodes;
}

}  // namespace cohort::slurm
