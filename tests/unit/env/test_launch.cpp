#include <boost/test/unit_test.hpp>

#include "cohort/env/launch.hpp"
#include "cohort/error.hpp"

using cohort::env::launch_argv;
using cohort::env::Launcher;
using cohort::env::LaunchOptions;
using cohort::env::Topology;
using Argv = std::vector<std::string>;

BOOST_AUTO_TEST_SUITE(env_launch)

BOOST_AUTO_TEST_CASE(mpirun_outside_slurm) {
  Topology lone;
  BOOST_TEST(launch_argv(lone, {2, {"cohort", "env"}, false}) ==
                 (Argv{"mpirun", "--oversubscribe", "-np", "2", "cohort", "env"}),
             boost::test_tools::per_element());
  BOOST_TEST(launch_argv(lone, {3, {"x"}, true}) ==
                 (Argv{"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "3", "x"}),
             boost::test_tools::per_element());
}

// Fewer ranks than cores: unbound, so that a rank's threads spread over the cores it is meant to
// use; as many ranks as cores (or more): Open MPI's own binding.
BOOST_AUTO_TEST_CASE(mpirun_unbinds_ranks_that_own_several_cores) {
  Topology lone;
  BOOST_TEST(launch_argv(lone, {1, {"x"}, false, 2}) ==
                 (Argv{"mpirun", "--oversubscribe", "-np", "1", "--bind-to", "none", "x"}),
             boost::test_tools::per_element());
  BOOST_TEST(launch_argv(lone, {2, {"x"}, false, 2}) ==
                 (Argv{"mpirun", "--oversubscribe", "-np", "2", "x"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(srun_inside_an_allocation) {
  for (const auto launcher : {Launcher::kSlurmBatch, Launcher::kSlurmAlloc}) {
    Topology shell;
    shell.launcher = launcher;
    BOOST_TEST(launch_argv(shell, {4, {"cohort", "env"}, true}) ==
                   (Argv{"srun", "--mpi=pmix", "-n", "4", "cohort", "env"}),
               boost::test_tools::per_element());
  }
}

// A step of cohort supervise with spares: exactly these nodes, the same ranks on each, the job's
// other nodes excluded.
BOOST_AUTO_TEST_CASE(srun_on_named_nodes) {
  Topology shell;
  shell.launcher = Launcher::kSlurmBatch;
  LaunchOptions o{6, {"cohort", "train"}, false};
  o.nodelist = {"n1", "n3", "n4"};
  o.exclude = {"n2", "n5"};
  BOOST_TEST(launch_argv(shell, o) ==
                 (Argv{"srun", "--mpi=pmix", "-n", "6", "-N", "3", "--ntasks-per-node=2",
                       "--nodelist=n[1,3-4]", "--overlap", "--exclude=n[2,5]", "cohort", "train"}),
             boost::test_tools::per_element());
  o.exclude.clear();
  BOOST_TEST(launch_argv(shell, o) ==
                 (Argv{"srun", "--mpi=pmix", "-n", "6", "-N", "3", "--ntasks-per-node=2",
                       "--nodelist=n[1,3-4]", "--overlap", "cohort", "train"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(refuses_a_placement_it_cannot_keep) {
  Topology shell;
  shell.launcher = Launcher::kSlurmBatch;
  LaunchOptions uneven{5, {"x"}, false};
  uneven.nodelist = {"n1", "n2"};
  BOOST_CHECK_THROW(launch_argv(shell, uneven), cohort::UsageError);
  LaunchOptions both{2, {"x"}, false};
  both.nodelist = {"n1", "n2"};
  both.exclude = {"n2"};
  BOOST_CHECK_THROW(launch_argv(shell, both), cohort::UsageError);
  LaunchOptions outside{2, {"x"}, false};
  outside.exclude = {"n2"};
  BOOST_CHECK_THROW(launch_argv(Topology{}, outside), cohort::UsageError);
  LaunchOptions per_node{2, {"x"}, false, 0, true};
  per_node.nodelist = {"n1", "n2"};
  BOOST_CHECK_THROW(launch_argv(shell, per_node), cohort::UsageError);
}

BOOST_AUTO_TEST_CASE(refuses_nested_or_empty_launches) {
  Topology rank;
  rank.launcher = Launcher::kSlurmStep;
  rank.world_size = 2;
  BOOST_CHECK_THROW(launch_argv(rank, {2, {"x"}, false}), cohort::UsageError);
  BOOST_CHECK_THROW(launch_argv(Topology{}, {0, {"x"}, false}), cohort::UsageError);
  BOOST_CHECK_THROW(launch_argv(Topology{}, {2, {}, false}), cohort::UsageError);
}

BOOST_AUTO_TEST_SUITE_END()
