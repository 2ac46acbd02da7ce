// choose_rank_device: where a rank's model goes and which GPU it makes current, for each backend,
// binding and parallel.devices, on machines without a GPU (the device count is an argument).
#include <boost/test/unit_test.hpp>

#include "cohort/env/gpu_binding.hpp"
#include "cohort/error.hpp"
#include "cohort/train/rank_device.hpp"

using cohort::env::bind_gpu;
using cohort::env::Environment;
using cohort::train::choose_rank_device;
using cohort::train::GradBackend;
using Vars = std::map<std::string, std::string>;

namespace {

std::vector<c10::Device> devices(std::initializer_list<const char*> names) {
  std::vector<c10::Device> out;
  for (const char* name : names) out.emplace_back(name);
  return out;
}

// One start-up and its outcome: the ordinal made current and the placement, or the refusal.
struct Case {
  const char* name;
  GradBackend backend;
  Vars vars;
  int local_rank, local_size, cuda_devices;
  std::vector<c10::Device> configured;
  std::optional<int> cuda;          // expected ordinal (none: a CPU rank)
  std::vector<std::string> placed;  // expected placement, as Device::str()
  const char* refusal = nullptr;    // expected one-line error contains this (nullptr: none)
};

const std::vector<Case>& cases() {
  const Vars four{{"CUDA_VISIBLE_DEVICES", "0,1,2,3"}, {"SLURM_GPUS_ON_NODE", "4"}};
  const Vars per_task{{"CUDA_VISIBLE_DEVICES", "0"}, {"SLURM_GPUS_ON_NODE", "4"}};
  static const std::vector<Case> table = {
      {"mpi: the host, nothing current", GradBackend::kMpi, four, 2, 4, 4, {}, {}, {}},
      {"mpi keeps parallel.devices",
       GradBackend::kMpi,
       four,
       2,
       4,
       4,
       devices({"cuda:0", "cuda:1"}),
       {},
       {"cuda:0", "cuda:1"}},
      {"nccl, all GPUs visible: local rank r on cuda:r",
       GradBackend::kNccl,
       four,
       2,
       4,
       4,
       {},
       2,
       {"cuda:2"}},
      {"nccl, --gpus-per-task=1: each on its own cuda:0",
       GradBackend::kNccl,
       per_task,
       3,
       4,
       1,
       {},
       0,
       {"cuda:0"}},
      {"nccl, no variable: CUDA's count", GradBackend::kNccl, {}, 1, 2, 2, {}, 1, {"cuda:1"}},
      {"nccl, ranks share GPUs",
       GradBackend::kNccl,
       {{"CUDA_VISIBLE_DEVICES", "0,1"}},
       1,
       4,
       2,
       {},
       {},
       {},
       "4 local ranks share 2 GPUs (CUDA_VISIBLE_DEVICES='0,1')"},
      {"nccl, CPU-only LibTorch",
       GradBackend::kNccl,
       four,
       0,
       4,
       0,
       {},
       {},
       {},
       "LibTorch sees no CUDA device"},
      {"nccl, CUDA sees fewer than the variable names",
       GradBackend::kNccl,
       four,
       3,
       4,
       2,
       {},
       {},
       {},
       "ordinal 3 (local rank 3 of 4"},
      {"nccl, parallel.devices naming the rank's own",
       GradBackend::kNccl,
       {{"CUDA_VISIBLE_DEVICES", "0,1"}},
       0,
       1,
       2,
       devices({"cuda:0"}),
       0,
       {"cuda:0"}},
      {"nccl, parallel.devices spreading a rank over two GPUs",
       GradBackend::kNccl,
       {{"CUDA_VISIBLE_DEVICES", "0,1"}},
       0,
       1,
       2,
       devices({"cuda:0", "cuda:1"}),
       {},
       {},
       "parallel.devices lists 2 devices, and parallel.backend = nccl trains each rank on one"},
      {"nccl, parallel.devices = cuda: the rank's own",
       GradBackend::kNccl,
       four,
       1,
       4,
       4,
       devices({"cuda"}),
       1,
       {"cuda:1"}},
      {"nccl, parallel.devices naming another rank's GPU",
       GradBackend::kNccl,
       four,
       1,
       4,
       4,
       devices({"cuda:0"}),
       {},
       {},
       "parallel.devices is cuda:0, but this rank's GPU is cuda:1"},
      {"nccl, parallel.devices on the host",
       GradBackend::kNccl,
       four,
       0,
       4,
       4,
       devices({"cpu"}),
       {},
       {},
       "parallel.devices: cpu with parallel.backend = nccl"},
      {"nccl, parallel.devices beyond what the rank sees",
       GradBackend::kNccl,
       per_task,
       0,
       4,
       1,
       devices({"cuda:1"}),
       {},
       {},
       "cuda:1 is not a device of this rank, which sees 1"},
  };
  return table;
}

std::string refusal_of(const Case& c) {
  try {
    choose_rank_device(c.backend, c.configured,
                       bind_gpu(Environment(c.vars), c.local_rank, c.local_size, c.cuda_devices),
                       c.cuda_devices);
  } catch (const cohort::Error& e) {
    BOOST_TEST(static_cast<int>(e.exit_code()) == 2);
    return e.what();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(train_rank_device)

BOOST_AUTO_TEST_CASE(table_of_start_ups) {
  for (const Case& c : cases()) {
    BOOST_TEST_CONTEXT(c.name) {
      if (c.refusal != nullptr) {
        const std::string message = refusal_of(c);
        BOOST_TEST(message.find(c.refusal) != std::string::npos, message);
        BOOST_TEST(message.find('\n') == std::string::npos);
        continue;
      }
      const auto r = choose_rank_device(
          c.backend, c.configured,
          bind_gpu(Environment(c.vars), c.local_rank, c.local_size, c.cuda_devices),
          c.cuda_devices);
      BOOST_TEST(r.cuda.has_value() == c.cuda.has_value());
      BOOST_TEST(r.cuda.value_or(-1) == c.cuda.value_or(-1));
      std::vector<std::string> placed;
      for (const auto& d : r.devices) placed.push_back(d.str());
      BOOST_TEST(placed == c.placed, boost::test_tools::per_element());
      BOOST_TEST(r.configured == !c.configured.empty());
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
