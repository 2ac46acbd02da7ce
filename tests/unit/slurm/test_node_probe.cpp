// The reachability probe of a job's nodes (slurm::unreachable), against real sockets on the
// loopback: a listener answers; a closed port refuses; a listener whose accept queue is full drops
// the handshake, so the try runs into its timeout, as a cut link does; what cannot be probed is
// never blamed. The cut link itself is slurm.spare_restart's (a network namespace's veth down).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "cohort/io/unique_fd.hpp"
#include "cohort/slurm/node_probe.hpp"

using cohort::UniqueFd;
using cohort::slurm::Endpoint;
using cohort::slurm::ProbeOptions;
using cohort::slurm::unreachable;
using Names = std::vector<std::string>;

namespace {

// A TCP socket bound to a free loopback port; listening with `backlog` when it is >= 0.
struct Port {
  UniqueFd fd;
  std::uint16_t number = 0;
};

Port loopback_port(int backlog) {
  Port port{UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0))};
  BOOST_REQUIRE(port.fd.get() >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE(::bind(port.fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  socklen_t size = sizeof(address);
  BOOST_REQUIRE(::getsockname(port.fd.get(), reinterpret_cast<sockaddr*>(&address), &size) == 0);
  port.number = ntohs(address.sin_port);
  if (backlog >= 0) BOOST_REQUIRE(::listen(port.fd.get(), backlog) == 0);
  return port;
}

// A port nothing listens on: bound and closed again (the kernel answers a connection with RST).
std::uint16_t closed_port() { return loopback_port(-1).number; }

ProbeOptions quick() {
  ProbeOptions o;
  o.timeout = std::chrono::milliseconds(300);
  o.pause = std::chrono::milliseconds(20);
  return o;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(slurm_node_probe)

BOOST_AUTO_TEST_CASE(a_listener_answers_and_a_closed_port_is_unreachable) {
  const Port live = loopback_port(16);
  const std::uint16_t dead = closed_port();
  const auto found = unreachable({{"n1", "127.0.0.1", live.number},
                                  {"n2", "127.0.0.1", dead},
                                  {"n3", "localhost", live.number}},
                                 quick());
  BOOST_TEST(found == (Names{"n2"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_handshake_that_never_completes_runs_into_the_timeout_on_every_try) {
  // Backlog 0: the kernel keeps one connection waiting for accept() and drops the handshake of
  // the next ones, so they stay unanswered like a node behind a cut link.
  const Port full = loopback_port(0);
  std::vector<UniqueFd> fillers;
  for (int i = 0; i < 2; ++i) {
    fillers.emplace_back(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(full.number);
    ::connect(fillers.back().get(), reinterpret_cast<sockaddr*>(&address), sizeof(address));
  }
  const Port live = loopback_port(16);
  ProbeOptions o = quick();
  o.tries = 3;
  const auto begin = std::chrono::steady_clock::now();
  const auto found =
      unreachable({{"n1", "127.0.0.1", live.number}, {"n2", "127.0.0.1", full.number}}, o);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - begin);
  BOOST_TEST(found == (Names{"n2"}), boost::test_tools::per_element());
  // Three tries, each waited out to its timeout: not a refusal found at once.
  BOOST_TEST(took.count() >= 3 * o.timeout.count());
}

BOOST_AUTO_TEST_CASE(what_cannot_be_probed_is_never_blamed) {
  const auto found = unreachable(
      {{"n1", "", 6818}, {"n2", "127.0.0.1", 0}, {"n3", "127.0.0.1", closed_port()}}, quick());
  BOOST_TEST(found == (Names{"n3"}), boost::test_tools::per_element());
  BOOST_TEST(unreachable({}, quick()).empty());
}

BOOST_AUTO_TEST_CASE(more_nodes_than_one_batch_keep_their_order) {
  // 600 endpoints (the probe opens at most 256 connections at once): every third one refuses.
  const Port live = loopback_port(1024);
  const std::uint16_t dead = closed_port();
  std::vector<Endpoint> endpoints;
  Names expected;
  for (int i = 0; i < 600; ++i) {
    const std::string name = "n" + std::to_string(i);
    endpoints.push_back({name, "127.0.0.1", i % 3 == 2 ? dead : live.number});
    if (i % 3 == 2) expected.push_back(name);
  }
  const auto found = unreachable(endpoints, quick());
  BOOST_TEST(found == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
