// `cohort env [--json] [--all-ranks] [--parallel ...]`: the launcher's view of this rank, checked
// against MPI; or the data x pipeline x tensor mapping of the job's ranks.
#include <boost/program_options.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <utility>

#include "cohort/comm/backend_info.hpp"
#include "cohort/comm/mpi_session.hpp"
#include "cohort/config.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/env/hostlist.hpp"
#include "cohort/env/onednn.hpp"
#include "cohort/env/parallel_layout.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/env/topology_json.hpp"
#include "cohort/error.hpp"
#include "cohort/io/hdf5_version.hpp"
#include "cohort/ops/torch_runtime.hpp"
#include "cohort/slurm/version.hpp"
#include "command.hpp"
#include "options.hpp"

namespace po = boost::program_options;
using nlohmann::json;

namespace cohort::cli {
namespace {

// libslurm's release and, inside a job on rank 0 only (one RPC per job, not per rank), the
// controller's and whether the two are within Slurm's RPC window. Outside a job there may be no
// slurm.conf, and libslurm exits the process when it finds none: the controller is not asked.
json libslurm_report(const env::Topology& topology) {
  json out = {{"release", slurm::library_release()},
              {"api", slurm::library_api_version()},
              {"controller", nullptr},
              {"rpc_window", nullptr}};
  if (!topology.slurm || topology.rank != 0) return out;
  try {
    const std::string controller = slurm::controller_release();
    const auto check = slurm::check_rpc_window(slurm::library_release(), controller);
    out["controller"] = controller;
    out["rpc_window"] = check.compatible ? (check.message.empty() ? "ok" : check.message)
                                         : "outside: " + check.message;
  } catch (const SlurmError& e) {  // reported, not swallowed: `cohort env` is the diagnosis
    out["rpc_window"] = std::string("controller not reached: ") + e.what();
  }
  return out;
}

json build_report(const env::Topology& topology, const std::optional<comm::NodeLayout>& layout) {
  json report = env::to_json(topology);
  report["cohort_version"] = COHORT_VERSION;
  report["hostname"] = env::hostname();
  report["online_cpus"] = env::online_cpus();
  if (layout) report["mpi_layout"] = comm::to_json(*layout);
  json backends = json::array();
  for (const auto& b : comm::backend_info()) backends.push_back(comm::to_json(b));
  report["backends"] = backends;
  const auto torch = ops::torch_runtime();
  report["torch"] = ops::to_json(torch);
  report["onednn"] = env::to_json(env::onednn_info(), torch.onednn_convolutions);
  report["hdf5"] = {{"version", io::hdf5_library_version()}};
  report["libslurm"] = libslurm_report(topology);
  report["blas"] = env::to_json(env::blas_info());
  return report;
}

std::string text_or_dash(const json& value) {
  if (value.is_null()) return "-";
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// One "  key<padding>value" line of the text.
void row(std::ostringstream& out, const char* key, const std::string& value) {
  out << "  " << key << std::string(20 - std::string(key).size(), ' ') << value << "\n";
}

// The libraries' lines: the communication backends, LibTorch, oneDNN, HDF5, libslurm, BLAS.
void describe_libraries(const json& r, std::ostringstream& out);

std::string describe(const json& r) {
  std::ostringstream out;
  out << "cohort " << r["cohort_version"].get<std::string>() << ": rank " << r["rank"] << " of "
      << r["world_size"] << " (" << r["launcher"].get<std::string>() << ")\n";
  row(out, "local rank / size", r["local_rank"].dump() + " / " + r["local_size"].dump());
  row(out, "node",
      r["node_index"].dump() + " of " + r["node_count"].dump() + "  host " +
          (r["host"].get<std::string>().empty() ? r["hostname"].get<std::string>()
                                                : r["host"].get<std::string>()));
  row(out, "hosts", env::compress_hostlist(r["hosts"].get<std::vector<std::string>>()));
  if (!r["slurm"].is_null()) {
    const json& s = r["slurm"];
    row(out, "slurm job",
        s["job_id"].get<std::string>() + " step " + text_or_dash(s["step_id"]) + " array " +
            text_or_dash(s["array_job_id"]) + "_" + text_or_dash(s["array_task_id"]) +
            " restarts " + s["restart_count"].dump());
  }
  row(out, "cpus per task",
      r["cpus_per_task"] == 0 ? "- (" + r["online_cpus"].dump() + " online)"
                              : r["cpus_per_task"].dump());
  row(out, "gpus",
      r["gpus"].empty() ? "none" : r["gpus"].dump() + " device " + text_or_dash(r["cuda_device"]));
  if (r.contains("mpi_layout")) {
    row(out, "mpi hosts",
        r["mpi_layout"]["hosts"].dump() + " (launcher nodes per host " +
            r["mpi_layout"]["launcher_nodes_per_host"].dump() + ")");
  }
  describe_libraries(r, out);
  return out.str();
}

void describe_libraries(const json& r, std::ostringstream& out) {
  for (const auto& b : r["backends"]) {
    std::string text = b["detail"].get<std::string>();
    if (b["compiled"].get<bool>()) {
      text = b["version"].get<std::string>() + ", " +
             (b["name"] == "mpi" ? "" : b["devices"].dump() + " devices, ") + text;
      if (!b["cuda"].get<std::string>().empty()) text += ", CUDA " + b["cuda"].get<std::string>();
    }
    row(out, b["name"].get<std::string>().c_str(), text);
  }
  row(out, "torch",
      r["torch"]["version"].get<std::string>() + ", " + r["torch"]["intra_op_threads"].dump() +
          " intra-op threads (" + r["torch"]["library"].get<std::string>() + ")");
  const json& dnn = r["onednn"];
  row(out, "onednn",
      dnn["version"].get<std::string>().empty()
          ? std::string("none visible")
          : dnn["version"].get<std::string>() + ", " + dnn["isa"].get<std::string>() +
                ", convolutions " + dnn["convolutions"].get<std::string>() +
                (dnn["known_wrong"].get<bool>() ? " (this release's convolution backward is wrong)"
                                                : ""));
  row(out, "hdf5", r["hdf5"]["version"].get<std::string>());
  const json& ls = r["libslurm"];
  row(out, "libslurm",
      ls["release"].get<std::string>() + " (API " + ls["api"].get<std::string>() + ")" +
          (ls["controller"].is_null() ? std::string()
                                      : ", slurmctld " + ls["controller"].get<std::string>()) +
          (ls["rpc_window"].is_null() ? std::string()
                                      : ", RPC window " + text_or_dash(ls["rpc_window"])));
  row(out, "blas",
      r["blas"]["vendor"].get<std::string>() + " (" + r["blas"]["library"].get<std::string>() +
          ")");
}

std::string describe_all(const std::vector<json>& reports) {
  std::ostringstream out;
  out << "rank  local  node  host              gpus        launcher\n";
  for (const auto& r : reports) {
    char line[256];
    const std::string host = r["host"].get<std::string>().empty() ? r["hostname"].get<std::string>()
                                                                  : r["host"].get<std::string>();
    std::snprintf(line, sizeof line, "%-5d %-6s %-5d %-17s %-11s %s\n", r["rank"].get<int>(),
                  (r["local_rank"].dump() + "/" + r["local_size"].dump()).c_str(),
                  r["node_index"].get<int>(), host.c_str(),
                  r["gpus"].empty() ? "-" : r["gpus"].dump().c_str(),
                  r["launcher"].get<std::string>().c_str());
    out << line;
  }
  return out.str();
}

// Writes one whole block with a single call so that ranks' lines do not interleave.
void emit(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// "pipeline=2,tensor=2" (or pp=2,tp=2): the two factors of the layout.
std::pair<int, int> parse_parallel(const std::string& spec) {
  int pipeline = 1, tensor = 1;
  std::stringstream in(spec);
  for (std::string item; std::getline(in, item, ',');) {
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq);
    int* target = key == "pipeline" || key == "pp" ? &pipeline
                  : key == "tensor" || key == "tp" ? &tensor
                                                   : nullptr;
    COHORT_CHECK(target != nullptr && eq != std::string::npos, UsageError, "--parallel: '", item,
                 "' is not pipeline=N or tensor=N");
    try {
      *target = std::stoi(item.substr(eq + 1));
    } catch (const std::exception&) {
      COHORT_THROW(UsageError, "--parallel: '", item, "' is not pipeline=N or tensor=N");
    }
  }
  return {pipeline, tensor};
}

// `cohort env --parallel ...`: the data x pipeline x tensor mapping of this job's ranks (or of
// --world N), printed once. Pure arithmetic: no MPI is started.
int print_layout(const po::variables_map& vm, const env::Topology& topology) {
  const auto [pipeline, tensor] = parse_parallel(vm["parallel"].as<std::string>());
  const int world = vm.count("world") ? vm["world"].as<int>() : topology.world_size;
  const int per_node = vm.count("world") ? 0 : topology.local_size;
  const auto layout = env::ParallelLayout::make(world, pipeline, tensor, per_node);
  if (topology.rank != 0) return 0;
  emit(vm.count("json") ? env::to_json(layout, topology).dump(2, ' ', true, kJsonReplace) + "\n"
                        : layout.describe());
  return 0;
}

}  // namespace

int run_env(const std::vector<std::string>& args, int* argc, char*** argv) {
  po::options_description options("cohort env options");
  options.add_options()("help,h", "show this help")("json", "print JSON (one object per rank)")(
      "all-ranks", "gather every rank's view to rank 0 and print them together")(
      "parallel", po::value<std::string>(),
      "print the data x pipeline x tensor rank mapping for pipeline=P,tensor=T")(
      "world", po::value<int>(), "with --parallel: this many ranks (default: the job's)");
  const auto parsed =
      parse_or_help(args, options,
                    "usage: cohort env [--json] [--all-ranks] [--parallel pipeline=P,tensor=T "
                    "[--world N]]\n");
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  env::Topology topology = env::detect(env::Environment::from_process());
  if (vm.count("parallel")) return print_layout(vm, topology);
  std::unique_ptr<comm::MpiSession> session;
  std::optional<comm::NodeLayout> layout;
  if (topology.distributed()) {
    session = std::make_unique<comm::MpiSession>(argc, argv);
    layout = session->verify(topology);
  }
  const json report = build_report(topology, layout);
  const bool as_json = vm.count("json") != 0;
  if (!vm.count("all-ranks")) {
    emit(as_json ? report.dump(-1, ' ', true, kJsonReplace) + "\n" : describe(report));
    return 0;
  }
  std::vector<json> reports;
  if (session) {
    for (const auto& text : session->gather_to_root(report.dump(-1, ' ', true, kJsonReplace)))
      reports.push_back(json::parse(text));
  } else {
    reports.push_back(report);
  }
  if (topology.rank == 0)
    emit(as_json ? json(reports).dump(2, ' ', true, kJsonReplace) + "\n" : describe_all(reports));
  return 0;
}

}  // namespace cohort::cli
