// Table-driven launcher scenarios. The Slurm ones are environments captured from a real
// Slurm 22.05 sandbox (tests/slurm/cluster.sh): srun, sbatch, salloc and mpirun inside sbatch.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"

using cohort::env::Environment;
using cohort::env::Launcher;
using Vars = std::map<std::string, std::string>;

namespace {

struct Expected {
  Launcher launcher;
  int rank, world_size, local_rank, local_size, node_index, node_count;
  std::string host;
  std::vector<std::string> hosts;
};

struct Scenario {
  std::string name;
  Vars vars;
  std::optional<Expected> expected;      // set for valid environments
  std::vector<std::string> error_words;  // set for invalid ones: words the message must hold
};

std::ostream& operator<<(std::ostream& out, const Scenario& s) { return out << s.name; }

Vars merge(Vars base, const Vars& extra) {
  for (const auto& [k, v] : extra) base[k] = v;
  return base;
}

// srun -N2 -n3, task 2 (captured).
const Vars kSrunRank2 = {{"SLURM_JOB_ID", "1"},
                         {"SLURM_JOBID", "1"},
                         {"SLURM_STEP_ID", "0"},
                         {"SLURM_STEPID", "0"},
                         {"SLURM_PROCID", "2"},
                         {"SLURM_LOCALID", "0"},
                         {"SLURM_NODEID", "1"},
                         {"PMIX_RANK", "2"},
                         {"SLURM_NTASKS", "3"},
                         {"SLURM_NPROCS", "3"},
                         {"SLURM_STEP_NUM_TASKS", "3"},
                         {"SLURM_STEP_NUM_NODES", "2"},
                         {"SLURM_JOB_NODELIST", "n[1-2]"},
                         {"SLURM_NODELIST", "n[1-2]"},
                         {"SLURM_STEP_NODELIST", "n[1-2]"},
                         {"SLURM_STEP_TASKS_PER_NODE", "2,1"},
                         {"SLURM_TASKS_PER_NODE", "2,1"},
                         {"SLURMD_NODENAME", "n2"},
                         {"SLURM_JOB_NAME", "bash"}};

// The batch script of `sbatch -N2 --ntasks-per-node=2` (captured).
const Vars kBatchShell = {{"ENVIRONMENT", "BATCH"},       {"SLURM_JOB_ID", "2"},
                          {"SLURM_JOBID", "2"},           {"SLURM_PROCID", "0"},
                          {"SLURM_LOCALID", "0"},         {"SLURM_NODEID", "0"},
                          {"SLURM_NTASKS", "4"},          {"SLURM_NPROCS", "4"},
                          {"SLURM_NTASKS_PER_NODE", "2"}, {"SLURM_JOB_NODELIST", "n[1-2]"},
                          {"SLURM_NODELIST", "n[1-2]"},   {"SLURM_TASKS_PER_NODE", "2(x2)"},
                          {"SLURMD_NODENAME", "n1"},      {"SLURM_JOB_NAME", "job.sh"}};

// `srun` inside that batch script, task 3 (captured).
const Vars kBatchSrunRank3 = merge(kBatchShell, {{"SLURM_STEP_ID", "0"},
                                                 {"SLURM_STEPID", "0"},
                                                 {"SLURM_PROCID", "3"},
                                                 {"SLURM_LOCALID", "1"},
                                                 {"SLURM_NODEID", "1"},
                                                 {"PMIX_RANK", "3"},
                                                 {"SLURM_STEP_NUM_TASKS", "4"},
                                                 {"SLURM_STEP_NUM_NODES", "2"},
                                                 {"SLURM_STEP_NODELIST", "n[1-2]"},
                                                 {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                                                 {"SLURMD_NODENAME", "n2"}});

// `mpirun -np 4` inside that batch script, rank 3 (captured): the SLURM_* step variables describe
// mpirun's daemon step (1 task per node), not the ranks.
const Vars kBatchMpirunRank3 = merge(kBatchShell, {{"OMPI_COMM_WORLD_RANK", "3"},
                                                   {"OMPI_COMM_WORLD_SIZE", "4"},
                                                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                                   {"OMPI_COMM_WORLD_NODE_RANK", "1"},
                                                   {"PMIX_RANK", "3"},
                                                   {"SLURM_STEP_ID", "1"},
                                                   {"SLURM_STEPID", "1"},
                                                   {"SLURM_PROCID", "1"},
                                                   {"SLURM_LOCALID", "0"},
                                                   {"SLURM_NODEID", "1"},
                                                   {"SLURM_NTASKS", "2"},
                                                   {"SLURM_STEP_NUM_TASKS", "2"},
                                                   {"SLURM_STEP_NUM_NODES", "2"},
                                                   {"SLURM_STEP_NODELIST", "n[1-2]"},
                                                   {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
                                                   {"SLURMD_NODENAME", "n2"}});

// The shell of `salloc -N1 -n2` (captured).
const Vars kSallocShell = {{"SLURM_JOB_ID", "3"},         {"SLURM_JOBID", "3"},
                           {"SLURM_NTASKS", "2"},         {"SLURM_NPROCS", "2"},
                           {"SLURM_JOB_NODELIST", "n1"},  {"SLURM_NODELIST", "n1"},
                           {"SLURM_TASKS_PER_NODE", "2"}, {"SLURM_JOB_NAME", "interactive"}};

// A minimal step on `nodelist` with `tpn` tasks per node, this task at (rank, node, local).
Vars step(const std::string& nodelist, const std::string& tpn, int rank, int node, int local) {
  return {{"SLURM_JOB_ID", "77"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_STEP_NODELIST", nodelist},
          {"SLURM_STEP_TASKS_PER_NODE", tpn},
          {"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_NODEID", std::to_string(node)},
          {"SLURM_LOCALID", std::to_string(local)}};
}

const Vars kTorchrun = {{"RANK", "5"},
                        {"WORLD_SIZE", "8"},
                        {"LOCAL_RANK", "1"},
                        {"LOCAL_WORLD_SIZE", "4"},
                        {"GROUP_RANK", "1"},
                        {"MASTER_ADDR", "n1"},
                        {"MASTER_PORT", "29500"},
                        {"TORCHELASTIC_RUN_ID", "abc"}};

const Launcher kStep = Launcher::kSlurmStep;

std::vector<Scenario> valid_scenarios() {
  return {
      {"nothing: lone process", {}, Expected{Launcher::kLone, 0, 1, 0, 1, 0, 1, "", {}}, {}},
      {"srun -N2 -n3 task 2",
       kSrunRank2,
       Expected{kStep, 2, 3, 0, 1, 1, 2, "n2", {"n1", "n2"}},
       {}},
      {"srun -N2 -n3 task 0",
       merge(kSrunRank2, {{"SLURM_PROCID", "0"}, {"PMIX_RANK", "0"}, {"SLURM_NODEID", "0"}}),
       Expected{kStep, 0, 3, 0, 2, 0, 2, "n1", {"n1", "n2"}},
       {}},
      {"sbatch script outside srun is one process",
       kBatchShell,
       Expected{Launcher::kSlurmBatch, 0, 1, 0, 1, 0, 1, "n1", {"n1", "n2"}},
       {}},
      {"srun inside sbatch task 3",
       kBatchSrunRank3,
       Expected{kStep, 3, 4, 1, 2, 1, 2, "n2", {"n1", "n2"}},
       {}},
      {"mpirun inside sbatch: OMPI gives ranks, Slurm the node",
       kBatchMpirunRank3,
       Expected{Launcher::kOpenMpi, 3, 4, 1, 2, 1, 2, "n2", {"n1", "n2"}},
       {}},
      {"salloc shell outside srun is one process",
       kSallocShell,
       Expected{Launcher::kSlurmAlloc, 0, 1, 0, 1, 0, 1, "", {"n1"}},
       {}},
      {"srun inside salloc",
       merge(kSallocShell, {{"SLURM_STEP_ID", "0"},
                            {"SLURM_PROCID", "1"},
                            {"SLURM_LOCALID", "1"},
                            {"SLURM_NODEID", "0"},
                            {"SLURM_STEP_NODELIST", "n1"},
                            {"SLURM_STEP_TASKS_PER_NODE", "2"}}),
       Expected{kStep, 1, 2, 1, 2, 0, 1, "n1", {"n1"}},
       {}},
      {"batch pseudo-step id is not a task step",
       merge(kBatchShell, {{"SLURM_STEP_ID", "4294967291"}}),
       Expected{Launcher::kSlurmBatch, 0, 1, 0, 1, 0, 1, "n1", {"n1", "n2"}},
       {}},
      {"SLURM_NTASKS absent with --ntasks-per-node",
       step("c[1-2]", "2(x2)", 3, 1, 1),
       Expected{kStep, 3, 4, 1, 2, 1, 2, "c2", {"c1", "c2"}},
       {}},
      {"uneven tasks per node 3,1 (node 1)",
       step("c[1-2]", "3,1", 3, 1, 0),
       Expected{kStep, 3, 4, 0, 1, 1, 2, "c2", {"c1", "c2"}},
       {}},
      {"uneven tasks per node 3,1 (node 0)",
       step("c[1-2]", "3,1", 2, 0, 2),
       Expected{kStep, 2, 4, 2, 3, 0, 2, "c1", {"c1", "c2"}},
       {}},
      {"tasks per node 2(x3),1",
       step("n[1-4]", "2(x3),1", 6, 3, 0),
       Expected{kStep, 6, 7, 0, 1, 3, 4, "n4", {"n1", "n2", "n3", "n4"}},
       {}},
      {"hostlist linux[1,2]",
       step("linux[1,2]", "1(x2)", 1, 1, 0),
       Expected{kStep, 1, 2, 0, 1, 1, 2, "linux2", {"linux1", "linux2"}},
       {}},
      {"hostlist a,b[001,003],c",
       step("a,b[001,003],c", "1(x4)", 2, 2, 0),
       Expected{kStep, 2, 4, 0, 1, 2, 4, "b003", {"a", "b001", "b003", "c"}},
       {}},
      {"hostlist with dashes",
       step("gpu-node-[01-02]", "1,1", 0, 0, 0),
       Expected{kStep, 0, 2, 0, 1, 0, 2, "gpu-node-01", {"gpu-node-01", "gpu-node-02"}},
       {}},
      {"zero-padded n[008-011]",
       step("n[008-011]", "1(x4)", 2, 2, 0),
       Expected{kStep, 2, 4, 0, 1, 2, 4, "n010", {"n008", "n009", "n010", "n011"}},
       {}},
      {"several bracket groups",
       step("a[1-2],b[7,9-10]", "1(x5)", 4, 4, 0),
       Expected{kStep, 4, 5, 0, 1, 4, 5, "b10", {"a1", "a2", "b7", "b9", "b10"}},
       {}},
      {"step task count only (no tasks-per-node)",
       {{"SLURM_JOB_ID", "5"},
        {"SLURM_STEP_ID", "2"},
        {"SLURM_STEP_NODELIST", "x[1-2]"},
        {"SLURM_STEP_NUM_TASKS", "4"},
        {"SLURM_PROCID", "1"},
        {"SLURM_NODEID", "0"},
        {"SLURM_LOCALID", "1"}},
       Expected{kStep, 1, 4, 1, 2, 0, 2, "x1", {"x1", "x2"}},
       {}},
      {"torchrun", kTorchrun, Expected{Launcher::kTorchrun, 5, 8, 1, 4, 1, 2, "", {}}, {}},
      {"torchrun under srun: torchrun gives ranks",
       merge(step("n[1-2]", "1(x2)", 1, 1, 0), kTorchrun),
       Expected{Launcher::kTorchrun, 5, 8, 1, 4, 1, 2, "", {}},
       {}},
      {"Kubernetes Indexed Job",
       {{"JOB_COMPLETION_INDEX", "3"}, {"WORLD_SIZE", "4"}},
       Expected{Launcher::kIndexedJob, 3, 4, 0, 1, 3, 4, "", {}},
       {}},
      {"mpirun on one node",
       {{"OMPI_COMM_WORLD_RANK", "1"},
        {"OMPI_COMM_WORLD_SIZE", "2"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
        {"PMIX_RANK", "1"}},
       Expected{Launcher::kOpenMpi, 1, 2, 1, 2, 0, 1, "", {}},
       {}},
      {"mpirun on several nodes: node left to MPI",
       {{"OMPI_COMM_WORLD_RANK", "5"},
        {"OMPI_COMM_WORLD_SIZE", "8"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
        {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}},
       Expected{Launcher::kOpenMpi, 5, 8, 1, 4, -1, -1, "", {}},
       {}},
  };
}

std::vector<Scenario> invalid_scenarios() {
  const auto bad = [](std::string name, Vars vars, std::vector<std::string> words) {
    return Scenario{std::move(name), std::move(vars), std::nullopt, std::move(words)};
  };
  return {
      bad("SLURM_PROCID and PMIX_RANK disagree", merge(kSrunRank2, {{"PMIX_RANK", "1"}}),
          {"SLURM_PROCID=2", "PMIX_RANK=1"}),
      bad("OMPI rank and PMIX_RANK disagree", merge(kBatchMpirunRank3, {{"PMIX_RANK", "0"}}),
          {"OMPI_COMM_WORLD_RANK=3", "PMIX_RANK=0"}),
      bad("stale RANK in a Slurm step", merge(kSrunRank2, {{"RANK", "0"}}),
          {"SLURM_PROCID=2", "RANK=0"}),
      bad("malformed SLURM_PROCID", merge(kSrunRank2, {{"SLURM_PROCID", "two"}}),
          {"SLURM_PROCID", "'two'"}),
      bad("task count disagrees with tasks per node",
          merge(step("c[1-2]", "2,1", 0, 0, 0), {{"SLURM_STEP_NUM_TASKS", "4"}}),
          {"SLURM_STEP_TASKS_PER_NODE", "SLURM_STEP_NUM_TASKS=4"}),
      bad("node list disagrees with node count", merge(kSrunRank2, {{"SLURM_STEP_NUM_NODES", "3"}}),
          {"SLURM_STEP_NODELIST", "SLURM_STEP_NUM_NODES=3"}),
      bad("malformed node list", step("n[1-2", "1(x2)", 0, 0, 0), {"SLURM_STEP_NODELIST", "n[1-2"}),
      bad("malformed tasks per node", step("n[1-2]", "2(x", 0, 0, 0),
          {"SLURM_STEP_TASKS_PER_NODE", "2(x"}),
      bad("rank beyond world", step("n[1-2]", "1(x2)", 2, 1, 0), {"rank 2", "world size 2"}),
      bad("node id beyond node list", step("n[1-2]", "1(x2)", 1, 2, 0), {"SLURM_NODEID=2"}),
      bad("PMIX_RANK without any world size", {{"PMIX_RANK", "1"}}, {"PMIX_RANK=1"}),
      bad("LOCAL_RANK without LOCAL_WORLD_SIZE",
          {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}}, {"LOCAL_WORLD_SIZE"}),
      bad("MASTER_PORT out of range", merge(kTorchrun, {{"MASTER_PORT", "99999"}}),
          {"MASTER_PORT", "99999"}),
      bad("empty GPU entry", merge(kSrunRank2, {{"CUDA_VISIBLE_DEVICES", "0,,1"}}),
          {"CUDA_VISIBLE_DEVICES", "0,,1"}),
      bad("SLURMD_NODENAME outside the job's node list",
          merge(kBatchMpirunRank3, {{"SLURMD_NODENAME", "z9"}}),
          {"SLURMD_NODENAME='z9'", "SLURM_JOB_NODELIST"}),
      bad("negative rank", merge(kTorchrun, {{"RANK", "-1"}}), {"RANK", "-1"}),
      bad("array job id without task id", merge(kSrunRank2, {{"SLURM_ARRAY_JOB_ID", "9"}}),
          {"SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID"}),
  };
}

}  // namespace

BOOST_AUTO_TEST_SUITE(env_topology)

BOOST_DATA_TEST_CASE(valid_environment, boost::unit_test::data::make(valid_scenarios()), s) {
  const auto t = cohort::env::detect(Environment(s.vars));
  const Expected& e = *s.expected;
  BOOST_TEST(cohort::env::to_string(t.launcher) == cohort::env::to_string(e.launcher));
  BOOST_TEST(t.rank == e.rank);
  BOOST_TEST(t.world_size == e.world_size);
  BOOST_TEST(t.local_rank == e.local_rank);
  BOOST_TEST(t.local_size == e.local_size);
  BOOST_TEST(t.node_index == e.node_index);
  BOOST_TEST(t.node_count == e.node_count);
  BOOST_TEST(t.host == e.host);
  BOOST_TEST(t.hosts == e.hosts, boost::test_tools::per_element());
  BOOST_TEST(t.slurm.has_value() == (s.vars.count("SLURM_JOB_ID") != 0));
}

BOOST_DATA_TEST_CASE(invalid_environment, boost::unit_test::data::make(invalid_scenarios()), s) {
  try {
    const auto t = cohort::env::detect(Environment(s.vars));
    BOOST_ERROR("accepted: launcher " << cohort::env::to_string(t.launcher) << ", rank " << t.rank
                                      << " of " << t.world_size);
  } catch (const cohort::EnvironmentError& error) {
    const std::string message = error.what();
    for (const auto& word : s.error_words) {
      BOOST_TEST(message.find(word) != std::string::npos,
                 "'" << message << "' lacks '" << word << "'");
    }
    BOOST_TEST(message.find('\n') == std::string::npos);  // one line
  }
}

BOOST_AUTO_TEST_CASE(slurm_metadata) {
  const auto t =
      cohort::env::detect(Environment(merge(kSrunRank2, {{"SLURM_ARRAY_JOB_ID", "40"},
                                                         {"SLURM_ARRAY_TASK_ID", "7"},
                                                         {"SLURM_RESTART_COUNT", "2"},
                                                         {"SLURM_CPUS_PER_TASK", "8"}})));
  BOOST_REQUIRE(t.slurm.has_value());
  BOOST_TEST(t.slurm->job_id == "1");
  BOOST_TEST(t.slurm->step_id.value_or("") == "0");
  BOOST_TEST(t.slurm->array_job_id.value_or("") == "40");
  BOOST_TEST(t.slurm->array_task_id.value_or("") == "7");
  BOOST_TEST(t.slurm->restart_count == 2);
  BOOST_TEST(t.cpus_per_task == 8);
}

BOOST_AUTO_TEST_CASE(mpirun_in_slurm_keeps_job_metadata) {
  const auto t = cohort::env::detect(Environment(kBatchMpirunRank3));
  BOOST_REQUIRE(t.slurm.has_value());
  BOOST_TEST(t.slurm->job_id == "2");
  BOOST_TEST(t.slurm->job_nodelist == "n[1-2]");
}

BOOST_AUTO_TEST_CASE(torchrun_rendezvous) {
  const auto t = cohort::env::detect(Environment(kTorchrun));
  BOOST_TEST(t.master_addr.value_or("") == "n1");
  BOOST_TEST(t.master_port.value_or(0) == 29500);
}

BOOST_AUTO_TEST_SUITE_END()
