#include <boost/test/unit_test.hpp>
#include <string>

#include "cohort/comm/mpi_session.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"

using cohort::comm::MpiSession;
using cohort::env::Environment;

namespace {

cohort::env::Topology launcher_view() { return cohort::env::detect(Environment::from_process()); }

}  // namespace

BOOST_AUTO_TEST_SUITE(comm_mpi_session)

BOOST_AUTO_TEST_CASE(launcher_and_mpi_agree) {
  MpiSession session(nullptr, nullptr);
  auto topology = launcher_view();
  BOOST_TEST(session.size() >= 2);  // this suite is meant to run under mpirun -np >= 2
  BOOST_TEST(topology.rank == session.rank());
  BOOST_TEST(topology.world_size == session.size());
  const auto layout = session.verify(topology);
  BOOST_TEST(layout.hosts == 1);  // CI runs every rank on one host
  BOOST_TEST(session.node_size() == session.size());
  BOOST_TEST(session.node_rank() == topology.local_rank);
}

BOOST_AUTO_TEST_CASE(gather_keeps_rank_order_and_lengths) {
  MpiSession session(nullptr, nullptr);
  // Rank 1 sends an empty string: zero-length contributions must work.
  const std::string mine =
      session.rank() == 1 ? "" : std::string(session.rank() + 3, 'a' + session.rank());
  const auto all = session.gather_to_root(mine);
  if (session.rank() == 0) {
    BOOST_TEST_REQUIRE(static_cast<int>(all.size()) == session.size());
    for (int r = 0; r < session.size(); ++r) {
      const std::string expected = r == 1 ? "" : std::string(r + 3, 'a' + r);
      BOOST_TEST(all[r] == expected);
    }
  } else {
    BOOST_TEST(all.empty());
  }
}

BOOST_AUTO_TEST_CASE(wrong_local_size_fails_on_every_rank) {
  MpiSession session(nullptr, nullptr);
  auto topology = launcher_view();
  if (session.rank() == 0) topology.local_size += 1;  // only one rank is wrong...
  // ...yet all ranks must throw, or the others would hang in the next collective.
  BOOST_CHECK_THROW(session.verify(topology), cohort::EnvironmentError);
  session.barrier();
}

BOOST_AUTO_TEST_CASE(wrong_rank_fails_on_every_rank) {
  MpiSession session(nullptr, nullptr);
  auto topology = launcher_view();
  topology.rank = (topology.rank + 1) % topology.world_size;
  BOOST_CHECK_EXCEPTION(session.verify(topology), cohort::EnvironmentError,
                        [](const cohort::EnvironmentError& e) {
                          return std::string(e.what()).find("MPI says rank") != std::string::npos;
                        });
  session.barrier();
}

BOOST_AUTO_TEST_CASE(unknown_node_is_filled_in_from_mpi) {
  MpiSession session(nullptr, nullptr);
  auto topology = launcher_view();
  topology.node_index = -1;
  topology.node_count = -1;
  session.verify(topology);
  BOOST_TEST(topology.node_index == 0);
  BOOST_TEST(topology.node_count == 1);
}

BOOST_AUTO_TEST_CASE(several_launcher_nodes_on_one_host_are_reported) {
  // The Slurm sandbox runs several slurmd on one machine: each launcher node is one host's part.
  MpiSession session(nullptr, nullptr);
  auto topology = launcher_view();
  topology.node_index = topology.rank;
  topology.node_count = topology.world_size;
  topology.local_rank = 0;
  topology.local_size = 1;
  const auto layout = session.verify(topology);
  BOOST_TEST(layout.launcher_nodes_per_host == session.size());
  BOOST_TEST(layout.hosts == 1);
}

BOOST_AUTO_TEST_SUITE_END()
