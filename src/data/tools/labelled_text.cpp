// `cohort data import labelled-text`: lines "label<TAB>text" become a field dataset with one
// ragged input, the text's tokens (/inputs/tokens), and one class target (/targets/label).
#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "cohort/data/tokenizer.hpp"
#include "cohort/data/writer.hpp"
#include "cohort/error.hpp"
#include "data/tools/parsers.hpp"
#include "data/tools/tokenizer.hpp"

namespace cohort::data {

DatasetInfo import_labelled_text(const std::string& out, const ImportOptions& o) {
  COHORT_CHECK(!o.inputs.empty(), UsageError, "import labelled-text: give one or more files");
  parse::check_import_outputs(out, o);
  std::unique_ptr<Tokenizer> tokenizer;
  if (!o.tokenizer.empty()) tokenizer = std::make_unique<Tokenizer>(o.tokenizer);
  std::size_t line_ids = 0;  // the ids the line being read gave so far
  const auto encode = [&](std::string_view piece, std::vector<std::int32_t>& ids) {
    if (tokenizer) {
      line_ids += tokenizer->encode(piece, ids);
      return;
    }
    for (const char c : piece) ids.push_back(static_cast<unsigned char>(c));  // bytes 0..255
  };
  const auto end_line = [&](std::vector<std::int32_t>& ids) {
    if (tokenizer && line_ids > 0 && tokenizer->eos_id() >= 0) ids.push_back(tokenizer->eos_id());
    line_ids = 0;
  };
  std::vector<parse::LabelledExample> examples;
  for (const auto& path : o.inputs) {
    const std::size_t before = examples.size();
    parse::parse_labelled_lines(path, o.max_inflate_ratio, parse::kMaxLinePiece, encode, end_line,
                                examples);
    COHORT_CHECK(examples.size() > before, IoError, path, ": no labelled line");
  }
  // Class ids in label name order (as ImageFolder numbers its class folders).
  std::map<std::string, std::int64_t> classes;
  for (const auto& e : examples) classes.emplace(e.label, 0);
  std::int64_t next = 0;
  nlohmann::json names = nlohmann::json::array();
  for (auto& [name, id] : classes) {
    id = next++;
    names.push_back(name);
  }
  WriterSpec spec;
  spec.num_samples = static_cast<std::int64_t>(examples.size());
  spec.classes = static_cast<std::int64_t>(classes.size());
  spec.split = o.split;
  spec.chunk_bytes = o.chunk_bytes;
  record_sources(spec, "labelled text", o.inputs);
  spec.extra = {{"class_names", names.dump()}};
  if (tokenizer) {
    spec.extra.push_back({"tokenizer", std::filesystem::path(o.tokenizer).filename().string()});
    spec.extra.push_back({"tokenizer_checksum", tokenizer->checksum()});
  }
  FieldSpec tokens;
  tokens.name = "tokens";
  tokens.ragged = true;
  tokens.vocab_size = tokenizer ? tokenizer->vocab_size() : 256;
  tokens.dtype = tokens.vocab_size <= 65536 ? DType::kUInt16 : DType::kInt32;
  std::vector<std::int64_t> lengths, labels;
  std::vector<std::int32_t> values;
  for (const auto& e : examples) {
    lengths.push_back(static_cast<std::int64_t>(e.tokens.size()));
    labels.push_back(classes.at(e.label));
    values.insert(values.end(), e.tokens.begin(), e.tokens.end());
  }
  tokens.values = static_cast<std::int64_t>(values.size());
  FieldSpec label;
  label.name = "label";
  label.target = true;
  label.dtype = DType::kInt64;
  FieldWriter writer(out, spec, {tokens, label});
  if (tokens.dtype == DType::kInt32) {
    writer.append(0, lengths, values.data());
  } else {
    const std::vector<std::uint16_t> narrow(values.begin(), values.end());
    writer.append(0, lengths, narrow.data());
  }
  writer.write_rows(1, 0, spec.num_samples, labels.data());
  return writer.commit();
}

}  // namespace cohort::data
