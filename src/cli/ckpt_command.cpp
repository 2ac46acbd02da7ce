// `cohort ckpt list|inspect|verify`: checkpoints from the command line, one process, no MPI, no
// LibTorch (docs/formats/checkpoint.md). verify exits 0 when every slice matches its checksum, 3
// otherwise. `export` is cohort-torch's (ckpt_export_command.cpp).
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cohort/ckpt/inspect.hpp"
#include "cohort/error.hpp"
#include "command.hpp"
#include "options.hpp"

namespace po = boost::program_options;
using nlohmann::json;

namespace cohort::cli {
namespace {

struct Args {
  std::string path;
  bool as_json = false;
};

// Parses `<path> [--json]`; false when help was printed.
bool parse(const std::vector<std::string>& args, const char* usage, Args* out) {
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help")("json", "print JSON")(
      "path", path_value(&out->path, PathKind::kDirectory)->required(),
      "checkpoint directory or step directory");
  po::positional_options_description positional;
  positional.add("path", 1);
  const auto vm = parse_or_help(args, desc, "usage: " + std::string(usage) + "\n", &positional);
  if (!vm) return false;
  out->as_json = vm->count("json") != 0;
  return true;
}

int list(const std::vector<std::string>& args) {
  Args a;
  if (!parse(args, "cohort ckpt list DIR [--json]", &a)) return 0;
  json rows = json::array();
  for (const auto& e : ckpt::list_checkpoints(a.path)) rows.push_back(ckpt::to_json(e));
  if (a.as_json) {
    std::cout << rows.dump(2, ' ', true, kJsonReplace) << "\n";
    return 0;
  }
  for (const auto& r : rows) {
    if (r.contains("problem")) {
      std::printf("%s  unreadable: %s\n", r["path"].get<std::string>().c_str(),
                  r["problem"].get<std::string>().c_str());
      continue;
    }
    std::printf("%s  step %lld  epoch %lld  %d rank(s)  %.1f MB  %s%s\n",
                r["path"].get<std::string>().c_str(), r["step"].get<long long>(),
                r["epoch"].get<long long>(), r["world_size"].get<int>(),
                r["bytes"].get<double>() / 1e6, r["created"].get<std::string>().c_str(),
                r["latest"].get<bool>() ? "  (latest)" : "");
  }
  return 0;
}

int inspect(const std::vector<std::string>& args) {
  Args a;
  if (!parse(args, "cohort ckpt inspect PATH [--json]", &a)) return 0;
  const std::string dir = ckpt::resolve_checkpoint(a.path);
  const ckpt::Manifest m = ckpt::read_manifest(dir);
  const json out = ckpt::inspect_json(m, dir);
  if (a.as_json) {
    std::cout << out.dump(2, ' ', true, kJsonReplace) << "\n";
    return 0;
  }
  std::printf("%s: step %lld, epoch %lld, %lld samples seen, written by %d rank(s) on %d node(s)\n",
              dir.c_str(), static_cast<long long>(m.step), static_cast<long long>(m.epoch),
              static_cast<long long>(m.samples_seen), m.world_size, m.nodes);
  std::printf("config %s, cohort %s, %s; %zu tensors in %zu shards, %.1f MB\n",
              m.config_hash.c_str(), m.cohort_version.c_str(), m.created.c_str(), m.tensors.size(),
              m.shards.size(), out["bytes"].get<double>() / 1e6);
  for (const auto& t : m.tensors) {
    std::printf("  %-40s %-9s %-18s %zu slice(s)\n", t.name.c_str(), t.dtype.c_str(),
                json(t.shape).dump().c_str(), t.slices.size());
  }
  return 0;
}

int verify(const std::vector<std::string>& args) {
  Args a;
  if (!parse(args, "cohort ckpt verify PATH [--json]", &a)) return 0;
  const std::string dir = ckpt::resolve_checkpoint(a.path);
  const auto problems = ckpt::verify_checkpoint(dir);
  if (a.as_json) {
    std::cout << ckpt::verify_json(dir, problems).dump(2, ' ', true, kJsonReplace) << "\n";
  } else {
    for (const auto& p : problems) std::printf("%s\n", p.c_str());
    if (problems.empty())
      std::printf("%s: clean (every slice matches its checksum)\n", dir.c_str());
  }
  COHORT_CHECK(problems.empty(), IoError, dir, ": ", problems.size(), " problem(s)");
  return 0;
}

}  // namespace

int run_ckpt(const std::vector<std::string>& args, int*, char***) {
  const std::string sub = args.empty() ? "" : args[0];
  if (sub == "--help" || sub == "-h" || sub == "help") {
    std::cout << "usage: cohort ckpt <list|inspect|verify|export> PATH [options]\n       cohort "
                 "ckpt <subcommand> --help\n";
    return 0;
  }
  const std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (sub == "list") return list(rest);
  if (sub == "inspect") return inspect(rest);
  if (sub == "verify") return verify(rest);
  COHORT_THROW(UsageError, "cohort ckpt: unknown subcommand '", sub,
               "' (list, inspect, verify, export)");
}

}  // namespace cohort::cli
