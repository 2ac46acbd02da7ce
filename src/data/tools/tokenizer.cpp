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
  sentencepiece::util::Status status;
  try {
    status = impl_->processor.LoadFromSerializedProto(bytes);
  } catch (const std::exception& e) {  // darts-clone throws on a malformed piece table
    COHORT_THROW(IoError, model_path, ": not a SentencePiece model (", e.what(), ")");
  }
  COHORT_CHECK(status.ok(), IoError, model_path, ": not a SentencePiece model (", status.ToString(),
               ")");
  COHORT_CHECK(impl_->processor.GetPieceSize() > 0, IoError, model_path, ": an empty vocabulary");
  checksum_ = io::file_checksum(model_path);
}

Tokenizer::~Tokenizer() = default;

std::int64_t Tokenizer::vocab_size() const { return impl_->processor.GetPieceSize(); }

std::size_t Tokenizer::encode(std::string_view piece, std::vector<std::int32_t>& out) const {
  if (piece.empty()) return 0;
  std::vector<int> ids;
  const auto status = impl_->processor.Encode(absl::string_view(piece.data(), piece.size()), &ids);
  COHORT_CHECK(status.ok(), IoError, path_, ": encoding failed (", status.ToString(), ")");
  out.insert(out.end(), ids.begin(), ids.end());
  return ids.size();
}

std::int32_t Tokenizer::eos_id() const { return impl_->processor.eos_id(); }

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
  // Line by line, in pieces: neither a file nor a line is held whole (parse::kMaxLinePiece).
  std::vector<std::int32_t> tokens;
  for (const auto& path : o.inputs) {
    bool line_gave_ids = false;
    parse::for_each_line_piece(path, o.max_inflate_ratio, parse::kMaxLinePiece,
                               [&](std::string_view piece, bool ends_line) {
                                 line_gave_ids |= tokenizer.encode(piece, tokens) > 0;
                                 if (!ends_line) return;
                                 if (line_gave_ids && tokenizer.eos_id() >= 0) {
                                   tokens.push_back(tokenizer.eos_id());
                                 }
                                 line_gave_ids = false;
                               });
  }
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
