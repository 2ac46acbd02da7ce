// `cohort data split`: a dataset into a training and a validation part by torch.randperm's
// permutation; `cohort data select`: some classes of one, relabelled. Both read batches through
// the LibTorch reader, so cohort-torch runs them.
#include <boost/program_options.hpp>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "cohort/data/tools.hpp"
#include "cohort/error.hpp"
#include "command.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace cohort::cli {
namespace {

int split(const std::vector<std::string>& args) {
  std::string in, train_out, val_out;
  double fraction = 0.1;
  std::uint64_t seed = 0;
  po::options_description desc("cohort data split options");
  desc.add_options()("path", path_value(&in, PathKind::kFileOrDirectory)->required(),
                     "dataset to split")(
      "train", path_value(&train_out, PathKind::kOutputFile)->required(), "training part output")(
      "val", path_value(&val_out, PathKind::kOutputFile)->required(), "validation part output")(
      "val-fraction", po::value(&fraction)->default_value(0.1), "share for validation")(
      "seed", po::value(&seed)->default_value(0), "permutation seed (torch.randperm's)");
  po::positional_options_description positional;
  positional.add("path", 1);
  desc.add_options()("help,h", "show this help");
  const auto parsed =
      parse_or_help(args, desc, "usage: cohort data split PATH --train A --val B\n", &positional);
  if (!parsed) return 0;
  const auto result = data::split_dataset(in, train_out, val_out, fraction, seed);
  std::cout << train_out << ": " << result.train << " samples\n"
            << val_out << ": " << result.val << " samples\n";
  return 0;
}

int select(const std::vector<std::string>& args) {
  std::string in, out, list;
  std::int64_t per_class = 0;
  po::options_description desc("cohort data select options");
  desc.add_options()("path", path_value(&in, PathKind::kFileOrDirectory)->required(),
                     "classification dataset")(
      "classes", po::value(&list)->required(),
      "the classes to keep, comma-separated; they become 0..k-1 in this order")(
      "per-class", po::value(&per_class)->default_value(0),
      "keep the first N samples of each class (0: all)")(
      "out", path_value(&out, PathKind::kOutputFile)->required(), "output dataset");
  po::positional_options_description positional;
  positional.add("path", 1);
  desc.add_options()("help,h", "show this help");
  const auto parsed = parse_or_help(
      args, desc, "usage: cohort data select PATH --classes 5,6,7 [--per-class N] --out OUT\n",
      &positional);
  if (!parsed) return 0;
  std::vector<std::int64_t> classes;
  std::istringstream items(list);
  for (std::string item; std::getline(items, item, ',');) {
    std::size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(item, &used);
    } catch (const std::logic_error&) {
      used = 0;  // not a number: refused below
    }
    COHORT_CHECK(used > 0 && used == item.size(), UsageError, "select: --classes '", list,
                 "' is not a comma-separated list of class numbers");
    classes.push_back(value);
  }
  const auto result = data::select_classes(in, out, classes, per_class);
  std::cout << out << ": " << result.samples << " samples (";
  for (std::size_t i = 0; i < classes.size(); ++i) {
    std::cout << (i ? ", " : "") << "class " << classes[i] << " -> " << i << ": "
              << result.per_class[i];
  }
  std::cout << ")\n";
  return 0;
}

}  // namespace

int run_data_split(const std::vector<std::string>& args, int*, char***) {
  COHORT_CHECK(!args.empty() && (args.front() == "split" || args.front() == "select"), UsageError,
               "cohort-torch data: only 'split' and 'select'");
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  return args.front() == "split" ? split(rest) : select(rest);
}

}  // namespace cohort::cli
