// `cohort ckpt export`: a checkpoint's tensors as torch.load-able (.pt) and/or HDF5 (.h5) files.
// The one ckpt subcommand that needs LibTorch (it writes .pt pickles): cohort-torch runs it.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cohort/ckpt/export.hpp"
#include "cohort/error.hpp"
#include "cohort/io/output.hpp"
#include "command.hpp"
#include "options.hpp"

namespace po = boost::program_options;
using nlohmann::json;

namespace cohort::cli {
namespace {

int export_files(const std::vector<std::string>& args) {
  std::string path;
  std::vector<std::string> outs;
  ckpt::ExportOptions options;
  po::options_description desc("options");
  desc.add_options()("help,h", "show this help")("json", "print JSON")(
      "path", path_value(&path, PathKind::kDirectory)->required(),
      "checkpoint directory or step directory")(
      "out,o", path_value(&outs, PathKind::kOutputFile)->required(),
      "output file, repeatable: .pt/.pth (torch.load) or .h5/.hdf5 (HDF5)")(
      "prefix", po::value(&options.prefix)->default_value("model."),
      "export the tensors whose names start with this (\"\" for the whole training state)")(
      "keep-names", "keep the prefix in the exported names")(
      "no-verify", "do not check the slices against their checksums")(
      "torchscript", path_value(&options.torchscript, PathKind::kFile),
      "write this TorchScript module with the checkpoint's weights")(
      "run-module",
      "the same into the module the run kept (module.pt in its checkpoint directory)");
  po::positional_options_description positional;
  positional.add("path", 1);
  const auto parsed = parse_or_help(
      args, desc, "usage: cohort ckpt export PATH --out FILE.pt|FILE.h5 [...] [options]\n",
      &positional);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  options.run_module = vm.count("run-module") != 0;
  COHORT_CHECK(!options.run_module || options.torchscript.empty(), UsageError,
               "ckpt export: --run-module or --torchscript FILE, not both");
  options.strip_prefix = vm.count("keep-names") == 0;
  options.verify = vm.count("no-verify") == 0;
  // Every name and place checked before anything is written (one export per --out).
  io::OutputPlan plan;
  plan.read(path, "PATH").read(options.torchscript, "--torchscript");
  for (const auto& out : outs) {
    ckpt::export_format_of(out);
    plan.write(out, "--out");
  }
  plan.check();
  json rows = json::array();
  for (const auto& out : outs) {
    const auto s = ckpt::export_checkpoint(path, out, options);
    rows.push_back(ckpt::to_json(s));
    if (!vm.count("json")) {
      std::printf("%s: %d tensors, %.1f MB, step %lld from %s\n", s.out.c_str(), s.tensors,
                  static_cast<double>(s.bytes) / 1e6, static_cast<long long>(s.step),
                  s.source.c_str());
    }
  }
  if (vm.count("json")) std::cout << rows.dump(2, ' ', true, kJsonReplace) << "\n";
  return 0;
}

}  // namespace

int run_ckpt_export(const std::vector<std::string>& args, int*, char***) {
  COHORT_CHECK(!args.empty() && args.front() == "export", UsageError,
               "cohort-torch ckpt: only 'export'");
  return export_files(std::vector<std::string>(args.begin() + 1, args.end()));
}

}  // namespace cohort::cli
