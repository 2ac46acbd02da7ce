// data_probe: prints what the data module computes, as JSON, for tests that compare it with
// PyTorch and h5py (tests/data/*.py).
//   data_probe sampler < lines "SIZE WORLD SEED EPOCH SHUFFLE(0|1) DROP_LAST(0|1)"
//       -> one line per case: {"num_samples": n, "ranks": [[...], ...]}
//   data_probe read PATH RANK WORLD SEED BATCH EPOCHS PREFETCH [raw] [bucket=K] [max_length=N]
//       [workers=K]
//       [from=EPOCH,BATCH]
//       -> {"batches": [{"epoch", "index", "indices", "inputs", "targets",
//                        "fields": {name: {"shape", "values"}}}, ...]}
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cohort/data/loader.hpp"
#include "cohort/data/sampler.hpp"
#include "cohort/error.hpp"

namespace {

nlohmann::json flat(const at::Tensor& tensor) {
  const at::Tensor t = tensor.to(at::kDouble).contiguous();
  const double* v = t.data_ptr<double>();
  return std::vector<double>(v, v + t.numel());
}

void sampler_case(cohort::data::SamplerOptions o, std::int64_t epoch);

int sampler() {
  cohort::data::SamplerOptions o;
  std::int64_t epoch = 0;
  int shuffle = 0, drop_last = 0;
  while (std::cin >> o.size >> o.world >> o.seed >> epoch >> shuffle >> drop_last) {
    o.shuffle = shuffle != 0;
    o.drop_last = drop_last != 0;
    sampler_case(o, epoch);
  }
  return 0;
}

void sampler_case(cohort::data::SamplerOptions o, std::int64_t epoch) {
  nlohmann::json ranks = nlohmann::json::array();
  std::int64_t num_samples = 0;
  for (int r = 0; r < o.world; ++r) {
    o.rank = r;
    cohort::data::DistributedSampler s(o);
    num_samples = s.num_samples();
    ranks.push_back(s.indices(epoch));
  }
  std::cout << nlohmann::json{{"num_samples", num_samples}, {"ranks", ranks}}.dump() << "\n";
}

int read(int argc, char** argv) {
  cohort::data::LoaderOptions o;
  o.path = argv[0];
  o.rank = std::atoi(argv[1]);
  o.world = std::atoi(argv[2]);
  o.seed = std::strtoull(argv[3], nullptr, 10);
  o.batch_size = std::atoll(argv[4]);
  const int epochs = std::atoi(argv[5]);
  o.prefetch = std::atoi(argv[6]);
  cohort::data::LoaderState from;
  for (int a = 7; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "raw") o.reader.raw = true;
    if (arg.rfind("bucket=", 0) == 0) o.bucket = std::atoll(arg.c_str() + 7);
    if (arg.rfind("workers=", 0) == 0) o.workers = std::atoi(arg.c_str() + 8);
    if (arg.rfind("transform=", 0) == 0) o.transform = arg.substr(10);
    if (arg.rfind("max_length=", 0) == 0) o.reader.max_length = std::atoll(arg.c_str() + 11);
    if (arg.rfind("from=", 0) == 0) {
      from.epoch = std::atoll(arg.c_str() + 5);
      from.batch = std::atoll(arg.substr(arg.find(',') + 1).c_str());
    }
  }
  o.reader.seed = o.seed;
  cohort::data::DataLoader loader(o);
  loader.restore(from);
  cohort::data::DistributedSampler sampler(
      {loader.info().num_samples, o.rank, o.world, o.seed, true, false});
  nlohmann::json batches = nlohmann::json::array();
  for (int e = static_cast<int>(from.epoch); e < epochs; ++e) {
    const auto order = sampler.indices(e);
    while (auto batch = loader.next()) {
      const auto begin = order.begin() + batch->index * o.batch_size;
      nlohmann::json fields = nlohmann::json::object();
      for (const auto* list : {&batch->fields, &batch->target_fields}) {
        for (const auto& f : *list) {
          fields[f.name] = {{"shape", f.tensor.sizes().vec()}, {"values", flat(f.tensor)}};
        }
      }
      batches.push_back(
          {{"epoch", batch->epoch},
           {"index", batch->index},
           {"sampler_indices", std::vector<std::int64_t>(begin, begin + o.batch_size)},
           {"indices", batch->indices},
           {"shape", batch->inputs.sizes().vec()},
           {"inputs", flat(batch->inputs)},
           {"targets", flat(batch->targets)},
           {"fields", fields}});
    }
  }
  std::cout << nlohmann::json{{"batches", batches}}.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string what = argc > 1 ? argv[1] : "";
    if (what == "sampler") return sampler();
    if (what == "read" && argc >= 9) return read(argc - 2, argv + 2);
    std::cerr << "usage: data_probe sampler < cases\n"
                 "       data_probe read PATH RANK WORLD SEED BATCH EPOCHS PREFETCH [raw]\n";
    return 2;
  } catch (const cohort::Error& error) {
    std::cerr << "data_probe: " << error.what() << "\n";
    return static_cast<int>(error.exit_code());
  }
}
