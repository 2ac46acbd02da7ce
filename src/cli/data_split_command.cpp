// `cohort data split`: a dataset into a training and a validation part by torch.randperm's
// permutation, so cohort-torch runs it.
#include <boost/program_options.hpp>
#include <iostream>

#include "cohort/data/tools.hpp"
#include "cohort/error.hpp"
#include "command.hpp"

namespace po = boost::program_options;

namespace cohort::cli {
namespace {

int split(const std::vector<std::string>& args) {
  std::string in, train_out, val_out;
  double fraction = 0.1;
  std::uint64_t seed = 0;
  po::options_description desc("cohort data split options");
  desc.add_options()("path", po::value(&in)->required(), "dataset to split")(
      "train", po::value(&train_out)->required(), "training part output")(
      "val", po::value(&val_out)->required(), "validation part output")(
      "val-fraction", po::value(&fraction)->default_value(0.1), "share for validation")(
      "seed", po::value(&seed)->default_value(0), "permutation seed (torch.randperm's)");
  po::positional_options_description positional;
  positional.add("path", 1);
  desc.add_options()("help,h", "show this help");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(positional).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: cohort data split PATH --train A --val B\n" << desc;
    return 0;
  }
  po::notify(vm);
  const auto result = data::split_dataset(in, train_out, val_out, fraction, seed);
  std::cout << train_out << ": " << result.train << " samples\n"
            << val_out << ": " << result.val << " samples\n";
  return 0;
}

}  // namespace

int run_data_split(const std::vector<std::string>& args, int*, char***) {
  COHORT_CHECK(!args.empty() && args.front() == "split", UsageError,
               "cohort-torch data: only 'split'");
  return split(std::vector<std::string>(args.begin() + 1, args.end()));
}

}  // namespace cohort::cli
