#include "data/tools/tokenizer.hpp"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "cohort/data/tokenizer.hpp"
#include "cohort/data/writer.hpp"
#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/output.hpp"
#include "data/tools/parsers.hpp"

namespace cohort::data {
namespace {

constexpr std::size_t kMaxModelBytes = std::size_t{64} << 20;

}  // namespace

struct Tokenizer::Impl {
  sentencepiece::SentencePieceProcessor processor;
};

Tokenizer::Tokenizer(const std::string& model_path)
    : impl_(std::make_unique<Impl>()), path_(model_path) {
  const std::string bytes = io::read_small_file(model_path, kMaxModelBytes);
  const auto status = impl_->processor.LoadFromSerializedProto(bytes);
  COHORT_CHECK(status.ok(), IoError, model_path, ": not a SentencePiece model (", status.ToString(),
               ")");
  COHORT_CHECK(impl_->processor.GetPieceSize() > 0, IoError, model_path, ": an empty vocabulary");
  checksum_ = io::file_checksum(model_path);
}

Tokenizer::~Tokenizer() = default;

std::int64_t Tokenizer::vocab_size() const { return impl_->processor.GetPieceSize(); }

std::vector<std::int32_t> Tokenizer::encode_lines(const std::string& text) const {
  std::vector<std::int32_t> tokens;
  std::vector<int> ids;
  const int eos = impl_->processor.eos_id();
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) {
      const auto status =
          impl_->processor.Encode(absl::string_view(text.data() + start, end - start), &ids);
      COHORT_CHECK(status.ok(), IoError, path_, ": encoding failed (", status.ToString(), ")");
      if (!ids.empty()) {
        tokens.insert(tokens.end(), ids.begin(), ids.end());
        if (eos >= 0) tokens.push_back(eos);
      }
    }
    start = end + 1;
  }
  return tokens;
}

void train_tokenizer(const std::string& out, const TokenizerOptions& o) {
  COHORT_CHECK(!o.inputs.empty(), UsageError, "tokenizer train: give one or more text files");
  COHORT_CHECK(o.vocab >= 8 && o.vocab <= (1 << 20), UsageError, "tokenizer train: vocab ", o.vocab,
               " is not in 8..2^20");
  COHORT_CHECK(o.type == "bpe" || o.type == "unigram", UsageError, "tokenizer train: type '",
               o.type, "' is not bpe or unigram");
  COHORT_CHECK(out.size() > 6 && out.compare(out.size() - 6, 6, ".model") == 0, UsageError,
               "tokenizer train: the output '", out, "' must end in .model");
  const std::string vocab_out = out.substr(0, out.size() - 6) + ".vocab";
  io::OutputPlan plan;
  std::string inputs;
  for (const auto& input : o.inputs) {
    io::file_bytes(input);  // exists and is a file: the IoError names it
    inputs += (inputs.empty() ? "" : ",") + input;
    plan.read(input, "CORPUS");
  }
  plan.write(out, "--out").write(vocab_out, "--out's .vocab").check();
  // SentencePiece writes by name, following links: it writes into a directory this process just
  // made (mkdtemp, beside `out`), where nothing can be waiting; the files are renamed from there.
  std::string directory = out.substr(0, out.size() - 6) + ".tmp-XXXXXX";
  COHORT_CHECK(::mkdtemp(directory.data()) != nullptr, IoError, directory,
               ": cannot create a temporary directory: ", std::strerror(errno));
  const std::string prefix = directory + "/model";
  struct RemoveDirectory {
    std::string path;
    ~RemoveDirectory() {
      std::error_code ignored;  // ours, made by mkdtemp; whatever is left in it is SentencePiece's
      std::filesystem::remove_all(path, ignored);
    }
  } remove_directory{directory};
  const auto status = sentencepiece::SentencePieceTrainer::Train({
      {"input", inputs},
      {"model_prefix", prefix},
      {"vocab_size", std::to_string(o.vocab)},
      {"model_type", o.type},
      {"character_coverage", std::to_string(o.character_coverage)},
      {"input_sentence_size", std::to_string(o.max_sentences)},
      {"shuffle_input_sentence", "true"},
      {"num_threads", std::to_string(o.threads)},
      {"minloglevel", "1"},
  });
  COHORT_CHECK(status.ok(), IoError, inputs, ": training the tokenizer failed (", status.ToString(),
               ")");
  io::commit_file(prefix + ".vocab", vocab_out);
  io::commit_file(prefix + ".model", out);
}

DatasetInfo import_text_tokens(const std::string& out, const ImportOptions& o) {
  COHORT_CHECK(!o.inputs.empty(), UsageError, "import text: give one or more text files");
  parse::check_import_outputs(out, o);
  const Tokenizer tokenizer(o.tokenizer);
  std::string text;
  for (const auto& path : o.inputs) text += parse::read_maybe_gz(path, o.max_inflate_ratio);
  const std::vector<std::int32_t> tokens = tokenizer.encode_lines(text);
  WriterSpec spec;
  spec.kind = DatasetKind::kTokens;
  spec.num_tokens = static_cast<std::int64_t>(tokens.size());
  COHORT_CHECK(spec.num_tokens > o.seq_len, IoError, o.inputs.front(), ": ", spec.num_tokens,
               " tokens, fewer than seq_len + 1 = ", o.seq_len + 1);
  spec.vocab_size = tokenizer.vocab_size();
  spec.token_dtype = spec.vocab_size <= 65536 ? DType::kUInt16 : DType::kInt32;
  spec.seq_len = o.seq_len;
  spec.split = o.split;
  spec.chunk_bytes = o.chunk_bytes;
  record_sources(spec, "text (SentencePiece tokens)", o.inputs);
  spec.extra = {{"tokenizer", std::filesystem::path(o.tokenizer).filename().string()},
                {"tokenizer_checksum", tokenizer.checksum()}};
  DatasetWriter writer(out, spec);
  if (spec.token_dtype == DType::kInt32) {
    writer.write_tokens(0, spec.num_tokens, tokens.data());
  } else {
    const std::vector<std::uint16_t> narrow(tokens.begin(), tokens.end());
    writer.write_tokens(0, spec.num_tokens, narrow.data());
  }
  return writer.commit();
}

}  // namespace cohort::data
