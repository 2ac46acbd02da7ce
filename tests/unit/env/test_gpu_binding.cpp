#include <boost/test/unit_test.hpp>

#include "cohort/env/gpu_binding.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"

using cohort::env::bind_gpu;
using cohort::env::Environment;
using cohort::env::GpuBinding;
using Vars = std::map<std::string, std::string>;

namespace {

// One launcher environment and what every local rank of it must get.
struct Case {
  const char* name;
  Vars vars;
  int local_size;
  std::vector<int> ordinals;  // per local rank; empty: no device
  bool shared;
  std::optional<int> cuda_count = std::nullopt;
};

// The environments Slurm, Open MPI and users make (docs/launcher.md, "GPU binding"). Slurm's
// values follow its gres plugin: SLURM_GPUS_ON_NODE counts the step's GPUs on the node in every
// task, CUDA_VISIBLE_DEVICES and SLURM_STEP_GPUS name only a bound task's own.
const std::vector<Case>& cases() {
  static const std::vector<Case> table = {
      {"cpu node", {}, 2, {}, false},
      {"NoDevFiles", {{"CUDA_VISIBLE_DEVICES", "NoDevFiles"}}, 1, {}, false},
      {"empty list hides every device", {{"CUDA_VISIBLE_DEVICES", ""}}, 1, {}, false, 4},
      {"--gpus-per-node=4, 4 tasks: all visible",
       {{"CUDA_VISIBLE_DEVICES", "0,1,2,3"},
        {"SLURM_STEP_GPUS", "4,5,6,7"},
        {"SLURM_GPUS_ON_NODE", "4"}},
       4,
       {0, 1, 2, 3},
       false},
      {"--gpus-per-task=1, 4 tasks (cgroup: each sees its own as 0)",
       {{"CUDA_VISIBLE_DEVICES", "0"}, {"SLURM_STEP_GPUS", "6"}, {"SLURM_GPUS_ON_NODE", "4"}},
       4,
       {0, 0, 0, 0},
       false},
      {"--gpus-per-task=2, 2 tasks",
       {{"CUDA_VISIBLE_DEVICES", "2,3"}, {"SLURM_GPUS_ON_NODE", "4"}},
       2,
       {0, 0},
       false},
      {"--gpu-bind=single:2, 4 tasks on 2 GPUs",
       {{"CUDA_VISIBLE_DEVICES", "1"}, {"SLURM_GPUS_ON_NODE", "2"}},
       4,
       {0, 0, 0, 0},
       true},
      {"--gpu-bind=closest, 2 tasks per socket of 2 GPUs",
       {{"CUDA_VISIBLE_DEVICES", "0,1"}, {"SLURM_GPUS_ON_NODE", "4"}},
       4,
       {0, 0, 0, 0},
       true},
      {"user's CUDA_VISIBLE_DEVICES wins over Slurm's ids",
       {{"CUDA_VISIBLE_DEVICES", "5,6"}, {"SLURM_STEP_GPUS", "1,2"}},
       2,
       {0, 1},
       false},
      {"SLURM_STEP_GPUS without CUDA_VISIBLE_DEVICES",
       {{"SLURM_STEP_GPUS", "4,5"}, {"SLURM_JOB_GPUS", "0"}},
       2,
       {0, 1},
       false},
      {"SLURM_JOB_GPUS in a batch script", {{"SLURM_JOB_GPUS", "2,3"}}, 1, {0}, false},
      {"one GPU, several ranks, no binding",
       {{"CUDA_VISIBLE_DEVICES", "3"}},
       4,
       {0, 0, 0, 0},
       true},
      {"fewer GPUs than ranks share in blocks",
       {{"CUDA_VISIBLE_DEVICES", "0,1"}},
       4,
       {0, 0, 1, 1},
       true},
      {"UUIDs", {{"CUDA_VISIBLE_DEVICES", "GPU-8f3a,MIG-1c2d"}}, 2, {0, 1}, false},
      {"no variable: CUDA's count", {}, 2, {0, 1}, false, 2},
      {"no variable, fewer devices than ranks", {}, 4, {0, 0, 1, 1}, true, 2},
      {"more GPUs than ranks", {{"CUDA_VISIBLE_DEVICES", "0,1,2,3"}}, 2, {0, 1}, false},
  };
  return table;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(env_gpu_binding)

BOOST_AUTO_TEST_CASE(table_of_launcher_environments) {
  for (const Case& c : cases()) {
    BOOST_TEST_CONTEXT(c.name) {
      for (int r = 0; r < c.local_size; ++r) {
        const GpuBinding b = bind_gpu(Environment(c.vars), r, c.local_size, c.cuda_count);
        BOOST_TEST_CONTEXT("local rank " << r) {
          BOOST_TEST(b.device.has_value() == !c.ordinals.empty());
          if (!c.ordinals.empty()) BOOST_TEST(b.device.value_or(-1) == c.ordinals[r]);
          BOOST_TEST(b.shared == c.shared);
          BOOST_TEST(cohort::env::sharing_text(b).empty() == !c.shared);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(own_gpu_is_the_ordinal_and_sharing_is_refused_naming_counts_and_variable) {
  const auto message = [](const Vars& vars, int local_size) -> std::string {
    try {
      cohort::env::require_own_gpu(bind_gpu(Environment(vars), 1, local_size), "nccl");
    } catch (const cohort::EnvironmentError& e) {
      return e.what();
    }
    return "";
  };
  BOOST_TEST(cohort::env::require_own_gpu(
                 bind_gpu(Environment(Vars{{"CUDA_VISIBLE_DEVICES", "0,1"}}), 1, 2), "nccl") == 1);
  BOOST_TEST(message({{"CUDA_VISIBLE_DEVICES", "0,1"}}, 4) ==
             "nccl: 4 local ranks share 2 GPUs (CUDA_VISIBLE_DEVICES='0,1'), and each rank needs "
             "a GPU of its own; start one rank per GPU (srun --ntasks-per-node=2 with "
             "--gpus-per-node, or --gpus-per-task=1)");
  const std::string bound =
      message({{"CUDA_VISIBLE_DEVICES", "0"}, {"SLURM_GPUS_ON_NODE", "2"}}, 4);
  BOOST_TEST(bound.find("4 local ranks share 2 GPUs (SLURM_GPUS_ON_NODE=2, 1 bound to each task "
                        "(CUDA_VISIBLE_DEVICES='0'))") != std::string::npos,
             bound);
  BOOST_TEST(message({}, 2) ==
             "nccl: this rank sees no GPU (none of CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS, "
             "SLURM_JOB_GPUS is set)");
  BOOST_TEST(message({{"CUDA_VISIBLE_DEVICES", ""}}, 2) ==
             "nccl: this rank sees no GPU (CUDA_VISIBLE_DEVICES='')");
}

BOOST_AUTO_TEST_CASE(garbage_is_rejected_naming_the_variable) {
  BOOST_CHECK_EXCEPTION(bind_gpu(Environment(Vars{{"SLURM_STEP_GPUS", "0,x"}}), 0, 1),
                        cohort::EnvironmentError, [](const cohort::EnvironmentError& e) {
                          return std::string(e.what()).find("SLURM_STEP_GPUS='0,x'") !=
                                 std::string::npos;
                        });
  BOOST_CHECK_THROW(
      bind_gpu(Environment(Vars{{"CUDA_VISIBLE_DEVICES", "0"}, {"SLURM_GPUS_ON_NODE", "four"}}), 0,
               1),
      cohort::EnvironmentError);
}

BOOST_AUTO_TEST_CASE(topology_carries_the_binding) {
  const Vars vars{{"OMPI_COMM_WORLD_RANK", "1"},
                  {"OMPI_COMM_WORLD_SIZE", "2"},
                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                  {"CUDA_VISIBLE_DEVICES", "2,3"}};
  const auto t = cohort::env::detect(Environment(vars));
  BOOST_TEST(t.cuda_device.value_or(-1) == 1);
  BOOST_TEST(t.gpus.size() == 2u);
  BOOST_TEST(!t.gpu_shared);
  Vars one = vars;
  one["CUDA_VISIBLE_DEVICES"] = "2";
  BOOST_TEST(cohort::env::detect(Environment(one)).gpu_shared);
}

BOOST_AUTO_TEST_SUITE_END()
