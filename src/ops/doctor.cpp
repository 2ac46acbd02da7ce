// This node's pre-flight checks (cohort/ops/doctor.hpp).
#include "cohort/ops/doctor.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>

#include <torch/cuda.h>

#include "cohort/data/dataset.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/env/gpu_health.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/output.hpp"
#include "cohort/io/unique_fd.hpp"
#include "cohort/models/model.hpp"
#include "cohort/settings/config_paths.hpp"
#include "cohort/slurm/version.hpp"
#include "models/materialize.hpp"
#include "models/task.hpp"

namespace cohort::ops {

// The run's settings by their own names.
using namespace ::cohort::settings;  // NOLINT(google-build-using-namespace)

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

CheckResult pass(const char* name, std::string detail) {
  return {name, CheckStatus::kPass, std::move(detail)};
}
CheckResult fail(const char* name, std::string detail) {
  return {name, CheckStatus::kFail, std::move(detail)};
}

std::string mib(double bytes) {
  std::ostringstream text;
  text.precision(bytes < 10 * kMiB ? 2 : 0);
  text << std::fixed << bytes / kMiB << " MiB";
  return text.str();
}

// The model's parameter count, built as a skeleton (no values, little memory) for the dataset.
std::int64_t model_parameters(const TrainConfig& config, const data::DatasetInfo& info) {
  const models::Task task(models::task_options(config.train), info);
  models::ModelInput input{info.sample_shape, task.outputs(), info.vocab_size, info.seq_len,
                           nullptr};
  for (const auto& field : info.fields) {
    if (!field.target) input.fields.push_back(field);
  }
  input.skeleton = true;
  const models::SkeletonScope skeleton;
  return models::parameter_count(*models::build_model(config.model, input));
}

// Optimizer state tensors per parameter: AdamW's two moments, SGD's momentum buffer.
double optimizer_states(const TrainConfig& config) {
  if (config.optim.name == Optimizer::kAdamw) return 2;
  return config.optim.momentum > 0 ? 1 : 0;
}

// Bytes per parameter of one rank: weights, gradients and optimizer state, each divided as ZeRO
// divides it over the data-parallel ranks.
double bytes_per_parameter(const TrainConfig& config, int ranks) {
  const double states = optimizer_states(config);
  const auto split = static_cast<double>(config.parallel.pipeline_stages * config.parallel.tensor);
  const double data = std::max(1.0, ranks / split);
  const auto zero = zero_sharding(config.parallel);
  return 4.0 *
         ((zero.parameters() ? 1 / data : 1) + (zero.gradients() ? 1 / data : 1) +
          (zero.optimizer_state() ? states / data : states)) /
         split;
}

// Every shard file opened and read at its start and its end (the filesystem really serves it).
void read_ends(const std::string& path) {
  for (const auto& file : data::shard_paths(path)) {
    const UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    COHORT_CHECK(fd.get() >= 0, IoError, file, ": cannot open");
    std::array<char, 4096> buffer{};
    const std::int64_t bytes = io::file_bytes(file);
    for (const std::int64_t at : {std::int64_t{0}, std::max<std::int64_t>(0, bytes - 4096)}) {
      COHORT_CHECK(::pread(fd.get(), buffer.data(), buffer.size(), at) >= 0, IoError, file,
                   ": cannot read at byte ", at);
    }
  }
}

CheckResult check_dataset(const TrainConfig& config, std::int64_t& parameters) {
  try {
    check_input_paths(config);
    auto info = data::describe(config.data.path);
    if (!config.data.target.empty()) data::select_target(info, config.data.target);
    read_ends(config.data.path);
    std::string detail = config.data.path + ": " + std::to_string(info.num_samples) + " samples";
    if (!config.data.val_path.empty()) {
      data::describe(config.data.val_path);
      read_ends(config.data.val_path);
      detail += "; " + config.data.val_path + " readable";
    }
    parameters = model_parameters(config, info);
    return pass("dataset", detail);
  } catch (const Error& e) {  // the check's finding, reported
    return fail("dataset", e.what());
  }
}

CheckResult check_run_dir(const TrainConfig& config, double checkpoint_bytes,
                          const std::string& node) {
  const std::string& dir = config.train.run_dir;
  try {
    io::make_directories(dir);
    // A probe this process creates exclusively and removes: a file already at the name is left.
    io::TemporaryFile probe(dir + "/.doctor-" + node);
    probe.write("cohort doctor\n");
    probe.discard();
  } catch (const Error& e) {
    return fail("run_dir", dir + " not writable: " + e.what());
  }
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return fail("run_dir", dir + ": statvfs failed");
  const double free = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  std::string detail = dir + " writable, " + mib(free) + " free";
  if (checkpoint_bytes <= 0) return pass("run_dir", detail + " (model size unknown)");
  detail += ", one more checkpoint needs ~" + mib(checkpoint_bytes);
  return free >= checkpoint_bytes ? pass("run_dir", detail) : fail("run_dir", detail);
}

// MemAvailable of /proc/meminfo in bytes; -1 when the kernel does not say.
double available_memory() {
  std::ifstream in("/proc/meminfo");
  for (std::string key; in >> key;) {
    double kib = 0;
    in >> kib;
    if (key == "MemAvailable:") return kib * 1024;
    in.ignore(256, '\n');
  }
  return -1;
}

CheckResult check_memory(const TrainConfig& config, const DoctorOptions& o,
                         std::int64_t parameters) {
  const double available = available_memory();
  if (available < 0) return {"memory", CheckStatus::kSkip, "/proc/meminfo has no MemAvailable"};
  std::string detail = mib(available) + " available";
  if (parameters <= 0) return pass("memory", detail + " (model size unknown)");
  const double need =
      static_cast<double>(parameters) * bytes_per_parameter(config, o.ranks) * o.ranks_per_node;
  detail += ", " + std::to_string(o.ranks_per_node) + " rank(s) hold ~" + mib(need) +
            " of parameters, gradients and optimizer state";
  return available >= need ? pass("memory", detail) : fail("memory", detail);
}

// A job on NCCL needs a GPU of its own for each of the node's ranks (NCCL refuses two ranks on one
// GPU): the CUDA devices this process sees (CUDA_VISIBLE_DEVICES and the job's cgroup applied,
// which NVML's count is not) must be enough, or the node fails here, before training would refuse
// it on every rank. The health of the GPUs is NVML's to say; without NVML that part skips.
CheckResult check_gpu(const TrainConfig& config, const DoctorOptions& o) {
  if (config.parallel.backend == GradBackend::kNccl) {
    const auto seen = static_cast<int>(torch::cuda::device_count());
    if (seen < o.ranks_per_node) {
      return fail("gpu", "parallel.backend = nccl needs " + std::to_string(o.ranks_per_node) +
                             " GPU(s) on this node, CUDA sees " + std::to_string(seen));
    }
  }
  const auto report = env::gpu_health();
  if (!report.nvml) return {"gpu", CheckStatus::kSkip, report.note};
  std::string problems;
  for (const auto& gpu : report.gpus) {
    if (!gpu.healthy) problems += "GPU " + std::to_string(gpu.index) + ": " + gpu.problem + "; ";
  }
  if (!problems.empty()) return fail("gpu", problems.substr(0, problems.size() - 2));
  return pass("gpu", std::to_string(report.gpus.size()) + " GPU(s) healthy");
}

CheckResult check_slurm() {
  if (!env::read_slurm_job(env::Environment::from_process())) {
    return {"slurm", CheckStatus::kSkip, "not inside a Slurm job"};
  }
  try {
    const std::string library = slurm::library_release();
    const std::string controller = slurm::controller_release();
    const auto window = slurm::check_rpc_window(library, controller);
    const std::string detail = "libslurm " + library + ", controller " + controller;
    return window.compatible ? pass("slurm", detail)
                             : fail("slurm", detail + ": " + window.message);
  } catch (const SlurmError& e) {
    return fail("slurm", std::string("controller not reached: ") + e.what());
  }
}

}  // namespace

void apply_fault_switch(const TrainConfig& config, NodeReport& report, const std::string& check) {
  const std::string& fault = config.debug.doctor_fault;
  if (fault != report.node + ":" + check) return;
  for (auto& result : report.checks) {
    if (result.name != check) continue;
    result.status = CheckStatus::kFail;
    result.detail = "failed by the fault switch debug.doctor_fault (" + fault + ")";
  }
}

NodeReport check_node(const TrainConfig& config, const DoctorOptions& options,
                      const std::string& node) {
  NodeReport report{node, {}};
  std::int64_t parameters = 0;
  const CheckResult dataset = check_dataset(config, parameters);
  const double checkpoint = static_cast<double>(parameters) * 4 * (1 + optimizer_states(config));
  report.checks.push_back(check_run_dir(config, checkpoint, node));
  report.checks.push_back(dataset);
  report.checks.push_back(check_memory(config, options, parameters));
  report.checks.push_back(check_gpu(config, options));
  report.checks.push_back(check_slurm());
  for (const char* check : {"run_dir", "dataset", "memory", "gpu", "slurm"}) {
    apply_fault_switch(config, report, check);
  }
  return report;
}

}  // namespace cohort::ops
