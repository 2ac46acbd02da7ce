#include <boost/test/unit_test.hpp>

#include "cohort/env/gpu_binding.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"

using cohort::env::bind_gpu;
using cohort::env::Environment;
using Vars = std::map<std::string, std::string>;

BOOST_AUTO_TEST_SUITE(env_gpu_binding)

BOOST_AUTO_TEST_CASE(cpu_node_has_no_device) {
  const auto b = bind_gpu(Environment(), 0, 2);
  BOOST_TEST(b.visible.empty());
  BOOST_TEST(!b.device.has_value());
  BOOST_TEST(!bind_gpu(Environment(Vars{{"CUDA_VISIBLE_DEVICES", "NoDevFiles"}}), 0, 1).device);
  BOOST_TEST(!bind_gpu(Environment(Vars{{"CUDA_VISIBLE_DEVICES", ""}}), 0, 1).device);
}

BOOST_AUTO_TEST_CASE(one_device_per_local_rank) {
  const Environment env(Vars{{"CUDA_VISIBLE_DEVICES", "0,1,2,3"}});
  for (int r = 0; r < 4; ++r) BOOST_TEST(bind_gpu(env, r, 4).device.value_or(-1) == r);
}

BOOST_AUTO_TEST_CASE(slurm_bound_single_device_is_ordinal_zero) {
  // --gpus-per-task=1: Slurm exposes one device per task, whatever its physical index.
  const auto b = bind_gpu(Environment(Vars{{"CUDA_VISIBLE_DEVICES", "3"}}), 3, 4);
  BOOST_TEST(b.device.value_or(-1) == 0);
  BOOST_TEST(b.visible == std::vector<std::string>{"3"}, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(cuda_visible_devices_wins_over_slurm_gpus) {
  const auto b = bind_gpu(
      Environment(Vars{{"CUDA_VISIBLE_DEVICES", "5,6"}, {"SLURM_STEP_GPUS", "1,2"}}), 1, 2);
  BOOST_TEST(b.visible == (std::vector<std::string>{"5", "6"}), boost::test_tools::per_element());
  BOOST_TEST(b.device.value_or(-1) == 1);
}

BOOST_AUTO_TEST_CASE(slurm_step_gpus_without_cuda_visible_devices) {
  const auto b =
      bind_gpu(Environment(Vars{{"SLURM_STEP_GPUS", "4,5"}, {"SLURM_JOB_GPUS", "0"}}), 1, 2);
  BOOST_TEST(b.visible == (std::vector<std::string>{"4", "5"}), boost::test_tools::per_element());
  BOOST_TEST(b.device.value_or(-1) == 1);
}

BOOST_AUTO_TEST_CASE(more_ranks_than_devices_share_in_blocks) {
  const Environment env(Vars{{"CUDA_VISIBLE_DEVICES", "0,1"}});
  const int expected[] = {0, 0, 1, 1};
  for (int r = 0; r < 4; ++r) BOOST_TEST(bind_gpu(env, r, 4).device.value_or(-1) == expected[r]);
}

BOOST_AUTO_TEST_CASE(uuids_are_accepted) {
  const auto b = bind_gpu(Environment(Vars{{"CUDA_VISIBLE_DEVICES", "GPU-8f3a,MIG-1c2d"}}), 1, 2);
  BOOST_TEST(b.visible.size() == 2u);
  BOOST_TEST(b.device.value_or(-1) == 1);
}

BOOST_AUTO_TEST_CASE(garbage_is_rejected_naming_the_variable) {
  BOOST_CHECK_EXCEPTION(bind_gpu(Environment(Vars{{"SLURM_STEP_GPUS", "0,x"}}), 0, 1),
                        cohort::EnvironmentError, [](const cohort::EnvironmentError& e) {
                          return std::string(e.what()).find("SLURM_STEP_GPUS='0,x'") !=
                                 std::string::npos;
                        });
}

BOOST_AUTO_TEST_CASE(topology_carries_the_binding) {
  const auto t = cohort::env::detect(Environment(Vars{{"OMPI_COMM_WORLD_RANK", "1"},
                                                      {"OMPI_COMM_WORLD_SIZE", "2"},
                                                      {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                      {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                                      {"CUDA_VISIBLE_DEVICES", "2,3"}}));
  BOOST_TEST(t.cuda_device.value_or(-1) == 1);
  BOOST_TEST(t.gpus.size() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()
