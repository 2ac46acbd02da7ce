// MpiSession: RAII over MPI's lifetime for one process.
//
// Protocol: construct once, early in main, when the topology says the process is distributed.
// The constructor calls MPI_Init_thread(MPI_THREAD_MULTIPLE) (unless MPI is already initialised,
// in which case it neither initialises nor finalises), duplicates MPI_COMM_WORLD into Cohort's own
// communicator with errors returned (never aborting silently), and splits it by shared-memory node.
// The destructor frees both communicators and finalises MPI; it never throws.
// `ready_within`: a start-up that is not done in that time (a peer rank that never joins, or one
// that died inside MPI_Init) ends the process with exit code 76, as the collective watchdog does.
// Without a limit the other ranks of a job whose rank died in its start-up wait in MPI_Init or
// the world's duplicate forever, so there is always one unless a caller passes 0.
// The header keeps mpi.h out of its includers.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "cohort/env/topology.hpp"

namespace cohort::comm {

// What MPI's own view of the nodes says, compared with the launcher's.
struct NodeLayout {
  int node_index = 0;  // the launcher's node index (filled in from MPI when it was unknown)
  int node_count = 1;
  int hosts = 1;                    // distinct shared-memory hosts MPI sees
  int launcher_nodes_per_host = 1;  // >1 when several launcher nodes share one host (a sandbox)
};

// `cohort env --json`'s "mpi_layout": hosts, launcher_nodes_per_host (the rest: the topology's).
nlohmann::json to_json(const NodeLayout& layout);

// The start-up limit when the caller has no other: parallel.timeout_s's default.
inline constexpr std::chrono::seconds kStartupLimit{600};

class MpiSession {
 public:
  explicit MpiSession(int* argc, char*** argv, std::chrono::seconds ready_within = kStartupLimit);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const;
  int size() const;
  int node_rank() const;  // rank in the shared-memory node communicator
  int node_size() const;

  // Checks that every rank's launcher view agrees with MPI's: same world rank and size, the
  // launcher's node-local ranks 0..local_size-1 on each node, and each launcher node inside one
  // shared-memory host. Fills in node index/count when the launcher did not give them. Collective.
  // Throws EnvironmentError naming the disagreement.
  NodeLayout verify(env::Topology& topology) const;

  // Gathers one string from every rank to rank 0 (rank order); other ranks get an empty vector.
  std::vector<std::string> gather_to_root(const std::string& mine) const;

  void barrier() const;

  // MPI's copy of `bytes` from this process to itself (MPI_Sendrecv on MPI_COMM_SELF), `repeats`
  // times: seconds per copy. `cohort doctor`'s loopback check.
  double loopback_seconds(std::size_t bytes, int repeats) const;

  // Ends every rank of the job now with `code` (MPI_Abort): after a fault that would leave the
  // other ranks waiting in a collective until the watchdog.
  [[noreturn]] void abort(int code) const;

  // MPI library identification ("Open MPI v4.1.4, ..."); callable without a session.
  static std::string library_version();

  struct Impl;  // defined in src/comm/mpi/, where the MPI backend reads the communicators

 private:
  friend const Impl& session_impl(const MpiSession&);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::comm
