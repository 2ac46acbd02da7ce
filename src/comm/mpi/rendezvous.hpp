// Rendezvous: one MPI world out of processes started apart with torchrun-style variables
// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT: torchrun, a Kubernetes Indexed Job's pods), which
// Open MPI starts as singletons, each a world of one.
//
// Protocol. prepare(), before MPI_Init: rank 0 starts `ompi-server` (Open MPI's rendezvous
// server, without which MPI_Comm_connect/accept between separately started processes fail) and
// listens on MASTER_PORT; every other rank connects to MASTER_ADDR:MASTER_PORT (retrying while
// rank 0 is not up yet) and waits for two lines: the server's URI and rank 0's MPI port name.
// Both sides then point Open MPI at the server (OMPI_MCA_pmix_server_uri) and MPI_Init may run.
// join(), after MPI_Init: rank 0 opens the MPI port and admits the others one at a time: it
// answers the next TCP connection, and every rank already in the growing world calls
// MPI_Comm_accept while the newcomer calls MPI_Comm_connect; each pair of intercommunicators is
// merged. The result is split by RANK, so that ranks are the launcher's. Every wait is bounded
// by COHORT_RENDEZVOUS_TIMEOUT_S (default 300 s; a rank that never comes is a one-line
// CommError naming what was waited for). The destructor, after MPI_Finalize, stops ompi-server.
#pragma once

#include <mpi.h>

#include <chrono>
#include <string>

#include "cohort/env/topology.hpp"
#include "cohort/io/unique_fd.hpp"

namespace cohort::comm {

class Rendezvous {
 public:
  // True for processes this class is for: torchrun-style launchers with WORLD_SIZE > 1.
  static bool needed(const env::Topology& topology);

  explicit Rendezvous(const env::Topology& topology);
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  void prepare();   // before MPI_Init
  MPI_Comm join();  // after MPI_Init; returns the world, ordered by RANK (caller frees it)

 private:
  void start_server();
  void admit_next(MPI_Comm& world, const std::string& port);

  int rank_, size_;
  std::string master_addr_;
  int master_port_;
  std::chrono::seconds timeout_;
  pid_t server_pid_ = -1;  // rank 0: ompi-server
  std::string server_uri_, port_name_, uri_file_;
  std::string tmpdir_;  // TMPDIR, read with the other settings in the constructor
  UniqueFd listener_;   // rank 0
};

}  // namespace cohort::comm
