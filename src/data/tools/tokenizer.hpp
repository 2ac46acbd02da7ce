// SentencePiece (Debian's libsentencepiece) behind `cohort data tokenizer train` and
// `cohort data import text --tokenizer`: a model file loaded with a size bound and its checksum,
// and the one rule by which a corpus becomes tokens, which the Python reference repeats.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cohort::data {

class Tokenizer {
 public:
  // Throws IoError naming the file when it is not a SentencePiece model.
  explicit Tokenizer(const std::string& model_path);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Each non-empty line encoded on its own, followed by the end-of-sentence id when the model
  // has one (SentencePiece's encode(line) + [eos_id()]).
  std::vector<std::int32_t> encode_lines(const std::string& text) const;
  std::int64_t vocab_size() const;
  const std::string& checksum() const { return checksum_; }  // xxh3-64 of the model file

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string path_, checksum_;
};

}  // namespace cohort::data
