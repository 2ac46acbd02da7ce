// Fuzz target: a SentencePiece model file as `cohort data tokenizer`, `import text --tokenizer`
// and `import labelled-text --tokenizer` load it (data::Tokenizer: libsentencepiece's
// LoadFromSerializedProto), and a text encoded by it as `import text` does: read by
// parse::for_each_line_piece, each piece given to Tokenizer::encode. The first two bytes are the
// text's length (little-endian), then the text, then the model file. Every id, eos_id() included,
// is within the model's vocabulary [0, vocab_size()); encode() returns the number of ids it
// appended, none for an empty piece; no piece is longer than parse::kMaxLinePiece.
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
#include "data/tools/tokenizer.hpp"
#include "fuzz_contract.hpp"

namespace data = cohort::data;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  static const std::string model_file = cohort::fuzz::scratch_path("tokenizer", ".model"),
                           text_file = cohort::fuzz::scratch_path("tokenizer", ".txt");
  if (size < 2) return 0;
  std::size_t text_bytes = bytes[0] | (std::size_t{bytes[1]} << 8);
  if (text_bytes > size - 2) text_bytes = size - 2;
  // A gzip text inflates up to a thousandfold: the importers' bound, not the tokenizer's, and
  // slow to encode under ASan; zlib reads any other text unchanged.
  if (text_bytes >= 2 && bytes[2] == 0x1f && bytes[3] == 0x8b) return 0;
  cohort::fuzz::write_scratch(text_file, bytes + 2, text_bytes);
  cohort::fuzz::write_scratch(model_file, bytes + 2 + text_bytes, size - 2 - text_bytes);
  cohort::fuzz::expect_contract([&] {
    const data::Tokenizer tokenizer(model_file);
    const std::int64_t vocab = tokenizer.vocab_size();
    const std::int32_t eos = tokenizer.eos_id();
    if (vocab <= 0 || eos < -1 || eos >= vocab) std::abort();
    std::vector<std::int32_t> ids;
    data::parse::for_each_line_piece(
        text_file, data::ImportOptions{}.max_inflate_ratio, data::parse::kMaxLinePiece,
        [&](std::string_view piece, bool) {
          if (piece.size() > data::parse::kMaxLinePiece) std::abort();
          const std::size_t before = ids.size();
          const std::size_t added = tokenizer.encode(piece, ids);
          if (added != ids.size() - before || (piece.empty() && added != 0)) std::abort();
        });
    for (const std::int32_t id : ids) {
      if (id < 0 || id >= vocab) std::abort();
    }
  });
  return 0;
}
