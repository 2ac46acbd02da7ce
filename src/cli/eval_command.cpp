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
#include "command.hpp"

namespace po = boost::program_options;

namespace cohort::cli {
namespace {

constexpr std::int64_t kMatrixInText = 20;  // more classes: the matrix is in --json only

nlohmann::json as_json(const train::CheckpointEvalReport& r) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [name, value] : r.result.metrics) metrics[name] = value;
  nlohmann::json out = {{"format", "cohort-eval"},
                        {"format_version", 1},
                        {"model", r.model},
                        {"step", r.step},
                        {"data", r.data},
                        {"task", r.result.task},
                        {"samples", r.result.samples},
                        {"per_token", r.result.per_token},
                        {"loss", r.result.loss},
                        {"metrics", metrics},
                        {"ranks", r.ranks},
                        {"seconds", r.seconds}};
  if (r.classes() == 0) return out;
  nlohmann::json classes = nlohmann::json::array(), confusion = nlohmann::json::array();
  for (std::int64_t c = 0; c < r.classes(); ++c) {
    const double accuracy = r.class_accuracy(c);
    nlohmann::json row_of_class = {{"class", c},
                                   {"name", r.class_names[static_cast<std::size_t>(c)]},
                                   {"samples", r.class_samples(c)},
                                   {"correct", r.count(c, c)},
                                   {"accuracy", nullptr}};
    if (!std::isnan(accuracy)) row_of_class["accuracy"] = accuracy;  // null: no samples
    classes.push_back(row_of_class);
    nlohmann::json row = nlohmann::json::array();
    for (std::int64_t p = 0; p < r.classes(); ++p) row.push_back(r.count(c, p));
    confusion.push_back(row);
  }
  out["classes"] = classes;
  out["confusion"] = confusion;
  return out;
}

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
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: cohort launch -n N -- cohort eval --checkpoint DIR|--model FILE "
                 "--data X.h5 [--json]\n"
              << desc;
    return 0;
  }
  po::notify(vm);
  o.model.task = parse_task(task);
  comm::MpiSession session(argc, argv);
  const auto report = train::evaluate_model(o, session);
  if (session.rank() != 0) return 0;
  if (vm.count("json")) {
    std::cout << as_json(report).dump(2, ' ', true, kJsonReplace) << "\n";
  } else {
    print_text(report);
  }
  return 0;
}

}  // namespace cohort::cli
