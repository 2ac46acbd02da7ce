// `cohort eval --checkpoint DIR|--model FILE --data X.h5 [--json]`: a trained model's metrics on a
// dataset, on every rank of the launch: the task's metrics, and for classification each class's
// accuracy and the confusion matrix (text, or JSON for `cohort report --eval`).
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cohort/comm/mpi_session.hpp"
#include "cohort/error.hpp"
#include "cohort/io/text.hpp"
#include "cohort/train/checkpoint_eval.hpp"
#include "cohort/train/json.hpp"
#include "command.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace cohort::cli {
namespace {

constexpr std::int64_t kMatrixInText = 20;  // more classes: the matrix is in --json only

void print_text(const train::CheckpointEvalReport& r) {
  std::printf("eval %s on %s: %lld %s, %d rank(s), %.2f s\n", r.model.c_str(), r.data.c_str(),
              static_cast<long long>(r.result.samples), r.result.per_token ? "tokens" : "samples",
              r.ranks, r.seconds);
  std::printf("loss %.4f", r.result.loss);
  for (const auto& [name, value] : r.result.metrics) std::printf(" %s %.4f", name.c_str(), value);
  std::printf("\n");
  if (r.classes() == 0) return;
  std::printf("\n%-5s %-24s %9s %9s\n", "class", "name", "samples", "accuracy");
  for (std::int64_t c = 0; c < r.classes(); ++c) {
    const double accuracy = r.class_accuracy(c);
    std::printf("%-5lld %-24.24s %9lld %9s\n", static_cast<long long>(c),
                io::printable(r.class_names[static_cast<std::size_t>(c)]).c_str(),
                static_cast<long long>(r.class_samples(c)),
                std::isnan(accuracy) ? "-" : std::to_string(accuracy).substr(0, 6).c_str());
  }
  if (r.classes() > kMatrixInText) {
    std::printf("\nconfusion matrix: %lld classes, in --json\n",
                static_cast<long long>(r.classes()));
    return;
  }
  std::printf("\nconfusion (rows: true class, columns: predicted)\n%5s", "");
  for (std::int64_t p = 0; p < r.classes(); ++p) std::printf(" %6lld", static_cast<long long>(p));
  std::printf("\n");
  for (std::int64_t c = 0; c < r.classes(); ++c) {
    std::printf("%5lld", static_cast<long long>(c));
    for (std::int64_t p = 0; p < r.classes(); ++p) {
      std::printf(" %6lld", static_cast<long long>(r.count(c, p)));
    }
    std::printf("\n");
  }
}

}  // namespace

int run_eval(const std::vector<std::string>& args, int* argc, char*** argv) {
  train::CheckpointEvalOptions o;
  std::string task = "auto";
  po::options_description desc("cohort eval options");
  desc.add_options()("help,h", "show this help");
  add_model_source_options(desc, o.model, task);
  desc.add_options()("data", path_value(&o.data, PathKind::kFileOrDirectory)->required(),
                     "the dataset to evaluate on (with its targets)")(
      "batch-size", po::value(&o.batch_size)->default_value(o.batch_size), "samples per forward")(
      "json", "print the metrics, per-class accuracy and confusion matrix as JSON");
  const auto parsed = parse_or_help(args, desc,
                                    "usage: cohort launch -n N -- cohort eval --checkpoint DIR|"
                                    "--model FILE --data X.h5 [--json]\n");
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  o.model.task = parse_task(task);
  comm::MpiSession session(argc, argv);
  const auto report = train::evaluate_model(o, session);
  if (session.rank() != 0) return 0;
  if (vm.count("json")) {
    std::cout << train::to_json(report).dump(2, ' ', true, kJsonReplace) << "\n";
  } else {
    print_text(report);
  }
  return 0;
}

}  // namespace cohort::cli
