// Fuzz target: the lines of `cohort data import labelled-text` ("label<TAB>text"), read in pieces
// and split by parse::parse_labelled_lines, the text encoded as its bytes (the import without a
// tokenizer). The first byte is the piece size (0: parse::kMaxLinePiece, the import's), the rest
// the file. Every line read is ended once; each label is non-empty and holds no tab or newline,
// each text no newline, and "label<TAB>text" is found in the file after the line before it.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/data/tools.hpp"
#include "data/tools/parsers.hpp"
#include "fuzz_contract.hpp"

namespace data = cohort::data;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t max_piece = data[0] == 0 ? data::parse::kMaxLinePiece : data[0];
  const std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  // A gzip file inflates up to a thousandfold (the importers' bound); zlib reads any other file
  // unchanged.
  if (file.size() >= 2 && file[0] == '\x1f' && file[1] == '\x8b') return 0;
  static const std::string text_file = cohort::fuzz::scratch_path("labelled-text", ".tsv");
  cohort::fuzz::write_scratch(text_file, file.data(), file.size());
  cohort::fuzz::expect_contract([&] {
    std::vector<data::parse::LabelledExample> examples;
    std::size_t ended = 0;
    data::parse::parse_labelled_lines(
        text_file, data::ImportOptions{}.max_inflate_ratio, max_piece,
        [](std::string_view piece, std::vector<std::int32_t>& ids) {
          for (const char c : piece) ids.push_back(static_cast<unsigned char>(c));
        },
        [&](std::vector<std::int32_t>&) { ++ended; }, examples);
    if (ended != examples.size()) std::abort();
    std::size_t after = 0;
    for (const auto& example : examples) {
      if (example.label.empty() || example.label.find_first_of("\t\n") != std::string::npos) {
        std::abort();
      }
      std::string row = example.label + '\t';
      for (const std::int32_t byte : example.tokens) {
        if (byte == '\n') std::abort();
        row.push_back(static_cast<char>(byte));
      }
      const std::size_t at = file.find(row, after);
      if (at == std::string::npos) std::abort();
      after = at + row.size();
    }
  });
  return 0;
}
