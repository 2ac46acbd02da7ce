#include "rendezvous.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "cohort/env/environment.hpp"
#include "cohort/error.hpp"
#include "mpi_check.hpp"
#include "mpi_compat.hpp"

namespace cohort::comm {
namespace {

using Clock = std::chrono::steady_clock;

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

UniqueFd listen_on(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  COHORT_CHECK(fd.get() >= 0, CommError, "rendezvous: socket() failed: ", std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  COHORT_CHECK(::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                   ::listen(fd.get(), 128) == 0,
               CommError, "rendezvous: rank 0 cannot listen on MASTER_PORT=", port, ": ",
               std::strerror(errno));
  return fd;
}

// Connects to addr:port, retrying until the deadline (rank 0 may not be listening yet).
UniqueFd connect_to(const std::string& addr, int port, Clock::time_point deadline) {
  std::string last = "no attempt";
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (rc != 0) {
      last = ::gai_strerror(rc);
    } else {
      for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
        if (fd.get() >= 0 && ::connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0) {
          ::freeaddrinfo(found);
          return fd;
        }
        last = std::strerror(errno);
      }
      ::freeaddrinfo(found);
    }
    COHORT_CHECK(Clock::now() < deadline, CommError, "rendezvous: cannot reach rank 0 at ",
                 "MASTER_ADDR=", addr, " MASTER_PORT=", port, " (", last, ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// Reads until the peer closes; the text is "<server uri>\n<port name>\n".
std::string read_until_closed(int fd, Clock::time_point deadline) {
  std::string text;
  char buffer[1024];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, ms_left(deadline));
    COHORT_CHECK(ready != 0, CommError, "rendezvous: rank 0 accepted the connection but sent ",
                 "nothing within COHORT_RENDEZVOUS_TIMEOUT_S");
    if (ready < 0 && errno == EINTR) continue;
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0) return text;
    if (n < 0 && errno == EINTR) continue;
    COHORT_CHECK(n > 0, CommError, "rendezvous: read failed: ", std::strerror(errno));
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    COHORT_CHECK(n > 0, CommError, "rendezvous: send failed: ", std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

bool Rendezvous::needed(const env::Topology& t) {
  return (t.launcher == env::Launcher::kTorchrun || t.launcher == env::Launcher::kIndexedJob) &&
         t.world_size > 1;
}

Rendezvous::Rendezvous(const env::Topology& t)
    : rank_(t.rank),
      size_(t.world_size),
      master_addr_(t.master_addr.value_or("")),
      master_port_(t.master_port.value_or(0)),
      timeout_(std::chrono::seconds(300)) {
  COHORT_CHECK(!master_addr_.empty() && master_port_ > 0, EnvironmentError, "WORLD_SIZE=", size_,
               " (", env::to_string(t.launcher), ") needs MASTER_ADDR and MASTER_PORT: where rank ",
               "0 waits for the others");
  COHORT_CHECK(mpi_compat::kHasOmpiServer, EnvironmentError, "WORLD_SIZE=", size_, " (",
               env::to_string(t.launcher), "): processes started apart join one MPI world through ",
               "ompi-server, which Open MPI 5 no longer has; start the ranks with srun, mpirun ",
               "or `cohort launch` (docs/launcher.md)");
  const auto environment = env::Environment::from_process();
  if (const auto seconds = environment.get_int("COHORT_RENDEZVOUS_TIMEOUT_S", 1, 1L << 31)) {
    timeout_ = std::chrono::seconds(*seconds);
  }
  tmpdir_ = environment.get("TMPDIR").value_or("");
}

Rendezvous::~Rendezvous() {
  if (server_pid_ > 0) {
    ::kill(server_pid_, SIGTERM);
    ::waitpid(server_pid_, nullptr, 0);
  }
  if (!uri_file_.empty()) ::unlink(uri_file_.c_str());
}

// Rank 0: ompi-server in the foreground of a child process, its URI read from the file it writes.
void Rendezvous::start_server() {
  uri_file_ = (tmpdir_.empty() ? std::string("/tmp") : tmpdir_) + "/cohort-ompi-server-" +
              std::to_string(::getpid()) + ".uri";
  ::unlink(uri_file_.c_str());
  server_pid_ = ::fork();
  COHORT_CHECK(server_pid_ >= 0, CommError, "rendezvous: fork() failed: ", std::strerror(errno));
  if (server_pid_ == 0) {
    const char* argv[] = {"ompi-server", "--no-daemonize", "-r", uri_file_.c_str(), nullptr};
    ::execvp("ompi-server", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (server_uri_.empty()) {
    int status = 0;
    COHORT_CHECK(::waitpid(server_pid_, &status, WNOHANG) == 0, CommError,
                 "rendezvous: ompi-server (Open MPI, package openmpi-bin) did not start (exit ",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1, ")");
    std::ifstream(uri_file_) >> server_uri_;
    COHORT_CHECK(Clock::now() < deadline, CommError,
                 "rendezvous: ompi-server wrote no URI within 30 s");
    if (server_uri_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void Rendezvous::prepare() {
  const auto deadline = Clock::now() + timeout_;
  if (rank_ == 0) {
    listener_ = listen_on(master_port_);
    start_server();
  } else {
    const UniqueFd fd = connect_to(master_addr_, master_port_, deadline);
    const std::string text = read_until_closed(fd.get(), deadline);
    const auto newline = text.find('\n');
    COHORT_CHECK(newline != std::string::npos && text.size() > newline + 1, CommError,
                 "rendezvous: rank 0 at ", master_addr_, ":", master_port_,
                 " sent no server URI and port name (another service on MASTER_PORT?)");
    server_uri_ = text.substr(0, newline);
    port_name_ = text.substr(newline + 1);
    while (!port_name_.empty() && port_name_.back() == '\n') port_name_.pop_back();
  }
  COHORT_CHECK(::setenv("OMPI_MCA_pmix_server_uri", server_uri_.c_str(), 1) == 0, CommError,
               "rendezvous: setenv failed");
}

// Rank 0 lets the next rank in: that rank learns the port over TCP, then the world accepts it.
void Rendezvous::admit_next(MPI_Comm& world, const std::string& port) {
  if (rank_ == 0) {
    pollfd p{listener_.get(), POLLIN, 0};
    const auto deadline = Clock::now() + timeout_;
    int ready = 0;
    while ((ready = ::poll(&p, 1, ms_left(deadline))) < 0 && errno == EINTR) {
    }
    int joined = 0;
    COHORT_MPI_CHECK(MPI_Comm_size(world, &joined));
    COHORT_CHECK(ready > 0, CommError, "rendezvous: only ", joined, " of ", size_,
                 " ranks arrived within COHORT_RENDEZVOUS_TIMEOUT_S (", timeout_.count(), " s)");
    const UniqueFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    COHORT_CHECK(client.get() >= 0, CommError, "rendezvous: accept failed: ", std::strerror(errno));
    write_all(client.get(), server_uri_ + "\n" + port + "\n");
  }
  MPI_Comm inter = MPI_COMM_NULL, merged = MPI_COMM_NULL;
  COHORT_MPI_CHECK(MPI_Comm_accept(port.c_str(), MPI_INFO_NULL, 0, world, &inter));
  COHORT_MPI_CHECK(MPI_Intercomm_merge(inter, 0, &merged));
  COHORT_MPI_CHECK(MPI_Comm_free(&inter));
  if (world != MPI_COMM_SELF) COHORT_MPI_CHECK(MPI_Comm_free(&world));
  world = merged;
}

MPI_Comm Rendezvous::join() {
  MPI_Comm world = MPI_COMM_SELF;
  if (rank_ == 0) {
    char port[MPI_MAX_PORT_NAME] = {};
    COHORT_MPI_CHECK(MPI_Open_port(MPI_INFO_NULL, port));
    port_name_ = port;
  } else {
    MPI_Comm inter = MPI_COMM_NULL;
    COHORT_MPI_CHECK(MPI_Comm_connect(port_name_.c_str(), MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter));
    COHORT_MPI_CHECK(MPI_Intercomm_merge(inter, 1, &world));
    COHORT_MPI_CHECK(MPI_Comm_free(&inter));
  }
  int joined = 0;
  COHORT_MPI_CHECK(MPI_Comm_size(world, &joined));
  while (joined < size_) {
    admit_next(world, port_name_);
    COHORT_MPI_CHECK(MPI_Comm_size(world, &joined));
  }
  if (rank_ == 0) {
    COHORT_MPI_CHECK(MPI_Close_port(port_name_.c_str()));
    listener_.reset();
  }
  MPI_Comm ordered = MPI_COMM_NULL;
  COHORT_MPI_CHECK(MPI_Comm_split(world, 0, rank_, &ordered));
  if (world != MPI_COMM_SELF) COHORT_MPI_CHECK(MPI_Comm_free(&world));
  return ordered;
}

}  // namespace cohort::comm
