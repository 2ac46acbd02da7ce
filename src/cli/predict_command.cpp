// `cohort predict --checkpoint DIR|--model FILE --data X.h5 --out preds.h5`: a trained model's
// outputs for every sample, on every rank of the launch, in sample order in one HDF5 file.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cohort/comm/mpi_session.hpp"
#include "cohort/error.hpp"
#include "cohort/io/dtype.hpp"
#include "cohort/train/json.hpp"
#include "cohort/train/predict.hpp"
#include "command.hpp"
#include "options.hpp"

namespace po = boost::program_options;

namespace cohort::cli {

void add_model_source_options(po::options_description& desc, train::ModelSource& model,
                              std::string& task) {
  desc.add_options()("checkpoint", path_value(&model.checkpoint, PathKind::kDirectory),
                     "a checkpoint directory (its latest) or a step directory of a run")(
      "config", path_value(&model.config, PathKind::kFile),
      "the run's resolved config (default: config.resolved.ini beside the checkpoint directory)")(
      "model", path_value(&model.model_file, PathKind::kFile),
      "or a TorchScript module (weights included)")(
      "task", po::value(&task)->default_value(task),
      "--model: auto | classification | regression | multilabel | language_model");
}

settings::TaskKind parse_task(const std::string& text) {
  for (const auto kind : {settings::TaskKind::kAuto, settings::TaskKind::kClassification,
                          settings::TaskKind::kRegression, settings::TaskKind::kMultilabel,
                          settings::TaskKind::kLanguageModel}) {
    if (settings::to_string(kind) == text) return kind;
  }
  COHORT_THROW(UsageError, "--task: '", text,
               "' is not one of auto, classification, regression, multilabel, language_model");
}

int run_predict(const std::vector<std::string>& args, int* argc, char*** argv) {
  train::PredictOptions o;
  std::string task = "auto";
  po::options_description desc("cohort predict options");
  desc.add_options()("help,h", "show this help");
  add_model_source_options(desc, o.model, task);
  desc.add_options()("data", path_value(&o.data, PathKind::kFileOrDirectory)->required(),
                     "the dataset to predict (its samples, in order)")(
      "out,o", path_value(&o.out, PathKind::kOutputFile)->required(),
      "the predictions file (HDF5)")(
      "batch-size", po::value(&o.batch_size)->default_value(o.batch_size), "samples per forward")(
      "delay-ms", po::value(&o.delay_ms)->default_value(0),
      "testing: sleep this long after each batch")("json", "print the summary as JSON");
  const auto parsed = parse_or_help(args, desc,
                                    "usage: cohort launch -n N -- cohort predict --checkpoint DIR|"
                                    "--model FILE --data X.h5 --out preds.h5\n");
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  o.model.task = parse_task(task);
  comm::MpiSession session(argc, argv);
  const auto s = train::predict(o, session);
  if (session.rank() != 0) return 0;
  if (vm.count("json")) {
    std::cout << train::to_json(s).dump(2, ' ', true, kJsonReplace) << "\n";
    return 0;
  }
  std::printf("%s: %lld samples (%s, outputs %s per sample%s) from %s, %d rank(s), %.1f s\n",
              s.out.c_str(), static_cast<long long>(s.samples), s.task.c_str(),
              io::shape_text(s.output_shape).c_str(), s.argmax ? ", argmax" : "", s.model.c_str(),
              s.ranks, s.seconds);
  return 0;
}

}  // namespace cohort::cli
