// `cohort data make-synthetic|import|inspect|stage|checksum`: dataset tools (docs/data.md), without
// LibTorch. `split` and `select` are cohort-torch's (data_split_command.cpp).
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <utility>

#include "cohort/data/batch_plan.hpp"
#include "cohort/data/images.hpp"
#include "cohort/data/tokenizer.hpp"
#include "cohort/data/tools.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/env/topology.hpp"
#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/text.hpp"
#include "command.hpp"
#include "options.hpp"

namespace po = boost::program_options;
using nlohmann::json;

namespace cohort::cli {
namespace {

// Parses args against desc (with positionals), prints help and returns true when asked.
bool parse(const std::vector<std::string>& args, po::options_description& desc,
           const po::positional_options_description& positional, po::variables_map& vm,
           const char* usage) {
  desc.add_options()("help,h", "show this help");
  auto parsed = parse_or_help(args, desc, "usage: " + std::string(usage) + "\n", &positional);
  if (!parsed) return true;
  vm = std::move(*parsed);
  return false;
}

int make_synthetic(const std::vector<std::string>& args) {
  data::SyntheticOptions o;
  std::string out;
  po::options_description desc("cohort data make-synthetic options");
  desc.add_options()("out,o", path_value(&out, PathKind::kOutputFile)->required(),
                     "output file (directory with --shards)")(
      "kind", po::value(&o.kind)->default_value(o.kind), "classification | images | tokens")(
      "samples", po::value(&o.samples)->default_value(o.samples),
      "samples (classification, images)")(
      "features", po::value(&o.features)->default_value(o.features), "features (classification)")(
      "classes", po::value(&o.classes)->default_value(o.classes), "classes")(
      "image-size", po::value(&o.image_size)->default_value(o.image_size), "image side (images)")(
      "channels", po::value(&o.channels)->default_value(o.channels), "image channels (images)")(
      "tokens", po::value(&o.tokens)->default_value(o.tokens), "stream length (tokens)")(
      "vocab", po::value(&o.vocab)->default_value(o.vocab), "vocabulary size (tokens)")(
      "seq-len", po::value(&o.seq_len)->default_value(o.seq_len), "sequence length (tokens)")(
      "seed", po::value(&o.seed)->default_value(o.seed), "random seed")(
      "shards", po::value(&o.shards)->default_value(o.shards), "write a directory of N shards")(
      "split", po::value(&o.split)->default_value(o.split), "split attribute")(
      "chunk-bytes", po::value(&o.chunk_bytes)->default_value(o.chunk_bytes), "HDF5 chunk target");
  po::positional_options_description positional;
  po::variables_map vm;
  if (parse(args, desc, positional, vm, "cohort data make-synthetic --out FILE [options]"))
    return 0;
  data::make_synthetic(out, o);
  std::cout << out << "\n";
  return 0;
}

// "H,W" or "S" (square).
std::pair<std::int64_t, std::int64_t> parse_size(const std::string& text) {
  const auto comma = text.find(',');
  try {
    std::size_t used = 0;
    const std::int64_t h = std::stoll(text.substr(0, comma), &used);
    COHORT_CHECK(used == (comma == std::string::npos ? text.size() : comma), UsageError, "");
    if (comma == std::string::npos) return {h, h};
    const std::int64_t w = std::stoll(text.substr(comma + 1), &used);
    COHORT_CHECK(used == text.size() - comma - 1, UsageError, "");
    return {h, w};
  } catch (const std::exception&) {
    COHORT_THROW(UsageError, "--size '", text, "' is not H,W (e.g. 224,224) or S");
  }
}

std::string val_sibling(const std::string& out) {
  const auto dot = out.rfind(".h5");
  return dot != std::string::npos && dot + 3 == out.size() ? out.substr(0, dot) + "-val.h5"
                                                           : out + "-val";
}

int import_images(const std::vector<std::string>& args) {
  data::ImageImportOptions o;
  std::string out, size;
  po::options_description desc("cohort data import images options");
  desc.add_options()("dir", path_value(&o.dir, PathKind::kDirectory)->required(),
                     "folder of class folders of images")(
      "out,o", path_value(&out, PathKind::kOutputFile)->required(),
      "output file (a directory of shards on N ranks)")(
      "size", po::value(&size)->required(), "output height,width (or one side: square)")(
      "crop", po::value(&o.crop)->default_value(o.crop),
      "none: resize the whole image; center: its centred region of the output's aspect")(
      "channels", po::value(&o.channels)->default_value(o.channels), "3: RGB; 1: grey")(
      "val-fraction", po::value(&o.val_fraction)->default_value(0.0),
      "this share of the images (by a hash of their path) to the validation output")(
      "val-out", path_value(&o.val_out, PathKind::kOutputFile),
      "validation output (default: OUT with -val)")(
      "strict", "stop at the first image that does not decode (default: skip and count it)")(
      "max-pixels", po::value(&o.max_pixels)->default_value(o.max_pixels),
      "refuse a larger image (a decompression bomb)")(
      "chunk-bytes", po::value(&o.chunk_bytes)->default_value(o.chunk_bytes), "HDF5 chunk target")(
      "json", "print the result as JSON");
  po::positional_options_description positional;
  positional.add("dir", 1);
  po::variables_map vm;
  if (parse(args, desc, positional, vm,
            "cohort data import images DIR --size H,W --out FILE [options]\n"
            "       cohort launch -n N -- cohort data import images DIR --size H,W --out DIR"))
    return 0;
  std::tie(o.height, o.width) = parse_size(size);
  o.strict = vm.count("strict") != 0;
  if (o.val_fraction > 0 && o.val_out.empty()) o.val_out = val_sibling(out);
  const auto topology = env::detect(env::Environment::from_process());
  o.rank = topology.rank;
  o.world = topology.world_size;
  const auto r = data::import_images(out, o);
  if (vm.count("json")) {
    std::cout << data::to_json(r, o).dump(2, ' ', true, kJsonReplace) << "\n";
  } else {
    std::cout << (r.out.empty() ? out : r.out) << ": " << r.train << " images of "
              << r.classes.size() << " classes"
              << (r.val_out.empty() ? "" : ", " + r.val_out + ": ")
              << (r.val_out.empty() ? "" : std::to_string(r.val) + " images") << "\n";
    if (r.skipped > 0) {
      std::cerr << "skipped " << r.skipped << " file(s) that did not decode, e.g.:\n";
      for (const auto& line : r.first_skipped) std::cerr << "  " << line << "\n";
    }
  }
  return 0;
}

int tokenizer(const std::vector<std::string>& args) {
  if (!args.empty() && (args.front() == "--help" || args.front() == "-h")) {
    std::cout << "usage: cohort data tokenizer train CORPUS... --vocab N --out NAME.model (see: "
                 "data tokenizer train --help)\n";
    return 0;
  }
  COHORT_CHECK(!args.empty() && args.front() == "train", UsageError,
               "data tokenizer: which subcommand? (train)");
  data::TokenizerOptions o;
  std::string out;
  po::options_description desc("cohort data tokenizer train options");
  desc.add_options()("input", path_value(&o.inputs, PathKind::kFile)->multitoken()->required(),
                     "text files, a sentence per line")(
      "out,o", path_value(&out, PathKind::kOutputFile)->required(),
      "the model, NAME.model (NAME.vocab beside it)")(
      "vocab", po::value(&o.vocab)->default_value(o.vocab), "vocabulary size")(
      "type", po::value(&o.type)->default_value(o.type), "bpe | unigram")(
      "character-coverage", po::value(&o.character_coverage)->default_value(1.0),
      "share of characters the vocabulary covers (0.9995 for large alphabets)")(
      "max-sentences", po::value(&o.max_sentences)->default_value(o.max_sentences),
      "train on at most this many sentences (sampled)")(
      "threads", po::value(&o.threads)->default_value(o.threads), "trainer threads");
  po::positional_options_description positional;
  positional.add("input", -1);
  po::variables_map vm;
  if (parse(std::vector<std::string>(args.begin() + 1, args.end()), desc, positional, vm,
            "cohort data tokenizer train CORPUS... --vocab N --out NAME.model"))
    return 0;
  data::train_tokenizer(out, o);
  std::cout << out << "\n";
  return 0;
}

int import(const std::vector<std::string>& args) {
  if (!args.empty() && args.front() == "images") {
    return import_images(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  data::ImportOptions o;
  std::string out;
  po::options_description desc("cohort data import options");
  const std::string input_help = "source file(s); fashion-mnist: its directory (default " +
                                 std::string(data::kFashionMnistDir) +
                                 "); digits, diabetes: default scikit-learn's files";
  desc.add_options()(
      "format", po::value(&o.format)->required(),
      "fashion-mnist | digits | diabetes | csv | npy | text | labelled-text | images")(
      "input", path_value(&o.inputs, PathKind::kFileOrDirectory)->multitoken(), input_help.c_str())(
      "out,o", path_value(&out, PathKind::kOutputFile)->required(), "output file")(
      "split", po::value(&o.split), "fashion-mnist: train | test; others: split attribute")(
      "label-column", po::value(&o.label_column)->default_value(-1), "csv: label column (-1 last)")(
      "float-targets", po::bool_switch(&o.float_targets),
      "csv, npy: store the labels as float32 regression targets (default: whole numbers >= 0 "
      "are class labels)")("shape", po::value(&o.shape)->multitoken(),
                           "csv: sample shape, e.g. --shape 1 8 8")(
      "seq-len", po::value(&o.seq_len)->default_value(o.seq_len), "text: sequence length")(
      "tokenizer", path_value(&o.tokenizer, PathKind::kFile),
      "text, labelled-text: a SentencePiece model (cohort data tokenizer train); default byte "
      "tokens")("chunk-bytes", po::value(&o.chunk_bytes)->default_value(o.chunk_bytes),
                "HDF5 chunk target")(
      "max-inflate-ratio", po::value(&o.max_inflate_ratio)->default_value(o.max_inflate_ratio),
      "a gzip source may inflate to this many times its size (at least 256 MiB)")(
      "json", "print the written dataset's description as JSON");
  po::positional_options_description positional;
  positional.add("format", 1).add("input", -1);
  po::variables_map vm;
  if (parse(args, desc, positional, vm,
            "cohort data import FORMAT [INPUT...] --out FILE\n"
            "       cohort data import images DIR --size H,W --out FILE (see: data import images "
            "--help)"))
    return 0;
  const auto info = o.format == "labelled-text" ? data::import_labelled_text(out, o)
                    : o.format == "text" && !o.tokenizer.empty() ? data::import_text_tokens(out, o)
                                                                 : data::import_dataset(out, o);
  std::cout << out << ": " << info.num_samples << " samples from " << info.source << "\n";
  return 0;
}

int inspect(const std::vector<std::string>& args) {
  std::string path;
  std::int64_t max_features = 16, batch_size = 0;
  int ranks = 1;
  po::options_description desc("cohort data inspect options");
  desc.add_options()("path", path_value(&path, PathKind::kFileOrDirectory)->required(),
                     "dataset file or shard directory")("json", "print JSON")(
      "max-features", po::value(&max_features)->default_value(16),
      "per-value statistics for the first N values of a sample")(
      "batch-size", po::value(&batch_size),
      "also check a training plan: per-rank batch size (with --ranks)")(
      "ranks", po::value(&ranks)->default_value(1), "ranks for --batch-size");
  po::positional_options_description positional;
  positional.add("path", 1);
  po::variables_map vm;
  if (parse(args, desc, positional, vm, "cohort data inspect PATH [--json]")) return 0;
  const auto inspection = data::inspect(path, max_features);
  json out = data::to_json(inspection);
  if (vm.count("batch-size")) {
    // As the DataLoader's defaults divide it (padded sampler, full batches only); throws when the
    // batch does not fit a rank's shard.
    const auto plan = data::plan_batches(path, inspection.info.num_samples, batch_size, ranks,
                                         /*drop_last=*/false, /*drop_last_batch=*/true);
    out["plan"] = data::to_json(plan, ranks, batch_size);
  }
  if (vm.count("json")) {
    std::cout << out.dump(2, ' ', true, kJsonReplace) << "\n";
  } else {
    std::cout << data::to_text(inspection);
    if (out.contains("plan")) {
      std::cout << "  plan    " << ranks << " ranks x batch " << batch_size << ": "
                << out["plan"]["batches_per_epoch"] << " batches per epoch\n";
    }
  }
  return 0;
}

std::string self_exe() { return env::executable_path().value_or("cohort"); }

int stage(const std::vector<std::string>& args) {
  std::string source, dest;
  po::options_description desc("cohort data stage options");
  desc.add_options()("path", path_value(&source, PathKind::kFileOrDirectory)->required(),
                     "dataset file or shard directory")(
      "to", path_value(&dest, PathKind::kOutputDirectory)->required(),
      "node-local directory (e.g. $TMPDIR, /local/scratch)")("json", "print JSON");
  po::positional_options_description positional;
  positional.add("path", 1);
  po::variables_map vm;
  if (parse(args, desc, positional, vm, "cohort data stage PATH --to DIR")) return 0;
  const auto result = data::stage(source, dest, self_exe());
  if (vm.count("json")) {
    std::cout << data::to_json(result).dump(2, ' ', true, kJsonReplace) << "\n";
  } else {
    std::cerr << "staged " << result.files.size() << " file(s) by " << result.method << " to "
              << result.nodes.size() << " node(s), verified, in " << result.seconds << " s\n";
    std::cout << result.destination << "\n";  // for DATA=$(cohort data stage ...)
  }
  return 0;
}

int checksum(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  po::options_description desc("cohort data checksum options");
  desc.add_options()("file", path_value(&files, PathKind::kFile)->multitoken()->required(),
                     "files");
  po::positional_options_description positional;
  positional.add("file", -1);
  po::variables_map vm;
  if (parse(args, desc, positional, vm, "cohort data checksum FILE...")) return 0;
  const std::string node =
      env::Environment::from_process().get("SLURMD_NODENAME").value_or(env::hostname());
  for (const auto& file : files) {
    // One line of four fields whatever the name holds (data stage reads them back).
    std::cout << io::printable(node) << "\t" << io::file_bytes(file) << "\t"
              << io::file_checksum(file) << "\t" << io::printable(file) << "\n";
  }
  return 0;
}

}  // namespace

int run_data(const std::vector<std::string>& args, int*, char***) {
  const std::string usage =
      "usage: cohort data <make-synthetic|import|inspect|split|select|stage|checksum|tokenizer> "
      "[options]\n"
      "       cohort data <subcommand> --help\n";
  const char* kSubcommands =
      " (make-synthetic, import, inspect, split, select, stage, checksum, tokenizer; cohort data "
      "--help)";
  COHORT_CHECK(!args.empty(), UsageError, "data: which subcommand?", kSubcommands);
  const std::string sub = args.front();
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (sub == "make-synthetic") return make_synthetic(rest);
  if (sub == "import") return import(rest);
  if (sub == "inspect") return inspect(rest);
  if (sub == "tokenizer") return tokenizer(rest);
  if (sub == "stage") return stage(rest);
  if (sub == "checksum") return checksum(rest);
  if (sub == "--help" || sub == "-h" || sub == "help") {
    std::cout << usage;
    return 0;
  }
  COHORT_THROW(UsageError, "data: unknown subcommand '", sub, "'", kSubcommands);
}

}  // namespace cohort::cli
