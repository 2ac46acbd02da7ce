// SentencePiece (Debian's libsentencepiece) behind `cohort data tokenizer train` and
// `cohort data import text --tokenizer`: a model file loaded with a size bound and its checksum,
// and the one rule by which a corpus becomes tokens, which the Python reference repeats.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cohort::data {

class Tokenizer {
 public:
  // Throws IoError naming the file when it is not a SentencePiece model.
  explicit Tokenizer(const std::string& model_path);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // `piece`, a line or a piece of one (parse::kMaxLinePiece), encoded on its own; its ids are
  // appended to `out`. Returns how many. The rule a corpus becomes tokens by (docs/data.md):
  // each line's pieces encoded, then eos_id() when the line gave any id and the model has one.
  std::size_t encode(std::string_view piece, std::vector<std::int32_t>& out) const;
  std::int32_t eos_id() const;  // -1: the model has none
  std::int64_t vocab_size() const;
  const std::string& checksum() const { return checksum_; }  // xxh3-64 of the model file

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string path_, checksum_;
};

}  // namespace cohort::data
