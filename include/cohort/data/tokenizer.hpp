// Subword tokenizers: SentencePiece (Debian's libsentencepiece) behind `cohort data tokenizer
// train` and `cohort data import text --tokenizer`.
//
// In the `cohort` command only, not in libcohort: libsentencepiece's libprotobuf and the
// protobuf inside Debian's LibTorch cannot live in one process (the second registration of
// descriptors crashes at load), and `cohort` is the program without LibTorch. A program linking
// libcohort reads the datasets these functions write like any other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/data/dataset.hpp"
#include "cohort/data/tools.hpp"

namespace cohort::data {

struct TokenizerOptions {
  std::vector<std::string> inputs;  // text files, one sentence per line
  std::int64_t vocab = 8000;
  std::string type = "bpe";         // bpe | unigram
  double character_coverage = 1.0;  // SentencePiece's; 0.9995 for large alphabets
  std::int64_t max_sentences = 1000000;
  int threads = 1;
};

// SentencePiece's trainer; writes `out` (must end in .model) and its .vocab beside it, by rename.
void train_tokenizer(const std::string& out, const TokenizerOptions& options);

// A corpus (options.inputs) encoded by the model options.tokenizer: each non-empty line by
// itself, followed by the model's end-of-sentence id (python3-sentencepiece: encode(line) +
// [eos_id()]); uint16 tokens up to a vocabulary of 65536, int32 above. The dataset records the
// model's file name and checksum (attributes `tokenizer`, `tokenizer_checksum`): training refuses
// a validation set tokenized by another model (check_same_tokenizer).
DatasetInfo import_text_tokens(const std::string& out, const ImportOptions& options);

// Lines "label<TAB>text" (files given in options.inputs) as a field dataset: /inputs/tokens, the
// text as ragged tokens of the model options.tokenizer (each line encode(text) + [eos_id()]) or,
// without one, its UTF-8 bytes (vocab_size 256); /targets/label, the class id in label name order
// (attribute class_names). For `cohort data import labelled-text`.
DatasetInfo import_labelled_text(const std::string& out, const ImportOptions& options);

}  // namespace cohort::data
