// import: real data into the Cohort format, recording the source files and their checksums.
#include <algorithm>
#include <cmath>

#include "cohort/data/tools.hpp"
#include "cohort/data/writer.hpp"
#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/files.hpp"
#include "data/tools/parsers.hpp"

namespace cohort::data {
namespace {

// Mean and (population) std of every value (per_feature = false) or of each of `features`
// columns, as numpy's mean() and std() give them: accumulated in double, in two passes (the
// deviations from the mean, not E[x^2] - E[x]^2, which cancels for large values). `T` is the
// values' own type: bytes are read as unsigned (pixels 128-255 are not negative).
template <typename T>
void set_stats(WriterSpec& spec, const T* x, std::size_t count, std::int64_t features,
               bool per_feature) {
  const auto groups = static_cast<std::size_t>(per_feature ? features : 1);
  const auto group_of = [&](std::size_t i) { return per_feature ? i % groups : 0; };
  std::vector<double> sum(groups, 0.0), dev(groups, 0.0);
  for (std::size_t i = 0; i < count; ++i) sum[group_of(i)] += static_cast<double>(x[i]);
  const double n = static_cast<double>(count) / static_cast<double>(groups);
  spec.mean.assign(groups, 0.0);
  spec.stddev.assign(groups, 1.0);
  for (std::size_t g = 0; g < groups; ++g) spec.mean[g] = sum[g] / n;
  for (std::size_t i = 0; i < count; ++i) {
    const double d = static_cast<double>(x[i]) - spec.mean[group_of(i)];
    dev[group_of(i)] += d * d;
  }
  for (std::size_t g = 0; g < groups; ++g) {
    const double var = dev[g] / n;
    // A constant feature (digits' always-blank corner pixels) is only shifted, not scaled.
    spec.stddev[g] = var > 1e-12 ? std::sqrt(var) : 1.0;
  }
}

void set_stats(WriterSpec& spec, const std::vector<float>& x, std::int64_t features,
               bool per_feature) {
  set_stats(spec, x.data(), x.size(), features, per_feature);
}

// Writes inputs (spec.input_dtype, row-major) and labels: int64 class labels when every label is
// a whole number >= 0 (classes = max + 1) and `float_targets` is off, float32 regression targets
// otherwise.
DatasetInfo write_labelled(const std::string& out, WriterSpec spec, const void* inputs,
                           const std::vector<double>& labels, bool float_targets) {
  const bool integral = !float_targets && std::all_of(labels.begin(), labels.end(), [](double v) {
    return v >= 0 && v == std::floor(v);
  });
  spec.num_samples = static_cast<std::int64_t>(labels.size());
  spec.target_dtype = integral ? DType::kInt64 : DType::kFloat32;
  spec.classes =
      integral ? static_cast<std::int64_t>(*std::max_element(labels.begin(), labels.end())) + 1 : 0;
  DatasetWriter writer(out, spec);
  if (integral) {
    std::vector<std::int64_t> y(labels.begin(), labels.end());
    writer.write_samples(0, spec.num_samples, inputs, y.data());
  } else {
    std::vector<float> y(labels.begin(), labels.end());
    writer.write_samples(0, spec.num_samples, inputs, y.data());
  }
  return writer.commit();
}

DatasetInfo import_fashion_mnist(const std::string& out, const ImportOptions& o) {
  const std::string dir = o.inputs.empty() ? kFashionMnistDir : o.inputs.front();
  const std::string split = o.split.empty() ? "train" : o.split;
  COHORT_CHECK(split == "train" || split == "test", UsageError,
               "import fashion-mnist: --split is train or test, not '", split, "'");
  const std::string prefix = dir + "/" + (split == "train" ? "train" : "t10k");
  const std::string images_path = prefix + "-images-idx3-ubyte.gz";
  const std::string labels_path = prefix + "-labels-idx1-ubyte.gz";
  const auto images =
      parse::parse_idx(parse::read_maybe_gz(images_path, o.max_inflate_ratio), images_path);
  const auto labels =
      parse::parse_idx(parse::read_maybe_gz(labels_path, o.max_inflate_ratio), labels_path);
  COHORT_CHECK(images.dims.size() == 3, IoError, images_path, ": expected [N, rows, cols]");
  COHORT_CHECK(labels.dims.size() == 1 && labels.dims[0] == images.dims[0], IoError, labels_path,
               ": ", labels.dims.empty() ? 0 : labels.dims[0], " labels for ", images.dims[0],
               " images");
  WriterSpec spec;
  spec.num_samples = images.dims[0];
  spec.sample_shape = {1, images.dims[1], images.dims[2]};
  spec.input_dtype = DType::kUInt8;
  spec.classes = 10;
  spec.split = split;
  spec.chunk_bytes = o.chunk_bytes;
  record_sources(spec, "fashion-mnist (Debian dataset-fashion-mnist)", {images_path, labels_path});
  // The labels' names, as the data set's authors list them (Zalando's README).
  spec.extra.push_back({"class_names",
                        R"(["T-shirt/top","Trouser","Pullover","Dress","Coat","Sandal","Shirt",)"
                        R"("Sneaker","Bag","Ankle boot"])"});
  // Normalization statistics always come from the training images, for both splits.
  const std::string train_images = dir + "/train-images-idx3-ubyte.gz";
  const auto stats_source =
      split == "train"
          ? images
          : parse::parse_idx(parse::read_maybe_gz(train_images, o.max_inflate_ratio), train_images);
  // IDX type 0x08 is unsigned bytes; the string holds them as (signed) char.
  set_stats(spec, reinterpret_cast<const unsigned char*>(stats_source.data.data()),
            stats_source.data.size(), 1, false);
  std::vector<std::int64_t> y(labels.data.begin(), labels.data.end());
  for (auto& v : y) v = static_cast<std::uint8_t>(v);
  DatasetWriter writer(out, spec);
  writer.write_samples(0, spec.num_samples, images.data.data(), y.data());
  return writer.commit();
}

DatasetInfo import_csv(const std::string& out, const ImportOptions& o, const std::string& what) {
  COHORT_CHECK(o.inputs.size() == 1, UsageError, "import ", what, ": give one input file");
  const std::string& path = o.inputs.front();
  const auto table = parse::parse_csv(parse::read_maybe_gz(path, o.max_inflate_ratio), path);
  COHORT_CHECK(table.columns >= 2, IoError, path, ": needs at least one feature and a label");
  const std::int64_t label = o.label_column < 0 ? table.columns - 1 : o.label_column;
  COHORT_CHECK(label < table.columns, UsageError, "import ", what, ": --label-column ", label,
               " but ", path, " has ", table.columns, " columns");
  const std::int64_t features = table.columns - 1;
  std::vector<float> x;
  std::vector<double> y;
  for (std::int64_t r = 0; r < table.rows; ++r) {
    for (std::int64_t c = 0; c < table.columns; ++c) {
      const double v = table.values[r * table.columns + c];
      if (c == label)
        y.push_back(v);
      else
        x.push_back(static_cast<float>(v));
    }
  }
  WriterSpec spec;
  spec.sample_shape = o.shape.empty() ? std::vector<std::int64_t>{features} : o.shape;
  std::int64_t numel = 1;
  for (auto d : spec.sample_shape) numel *= d;
  COHORT_CHECK(numel == features, UsageError, "import ", what, ": --shape holds ", numel,
               " values per sample but ", path, " has ", features, " features");
  spec.split = o.split;
  spec.chunk_bytes = o.chunk_bytes;
  record_sources(spec, what, {path});
  // Per feature for flat samples (a StandardScaler), one value for images.
  set_stats(spec, x, features, spec.sample_shape.size() == 1);
  return write_labelled(out, spec, x.data(), y, o.float_targets);
}

std::vector<float> npy_to_float(const parse::NpyArray& a, const std::string& path) {
  std::vector<float> x(a.data.size() / dtype_size(a.dtype));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const char* p = a.data.data() + i * dtype_size(a.dtype);
    switch (a.dtype) {
      case DType::kFloat32:
        x[i] = *reinterpret_cast<const float*>(p);
        break;
      case DType::kFloat64:
        x[i] = static_cast<float>(*reinterpret_cast<const double*>(p));
        break;
      case DType::kInt32:
        x[i] = static_cast<float>(*reinterpret_cast<const std::int32_t*>(p));
        break;
      case DType::kInt64:
        x[i] = static_cast<float>(*reinterpret_cast<const std::int64_t*>(p));
        break;
      default:
        COHORT_THROW(IoError, path, ": cannot convert ", to_string(a.dtype), " to float32");
    }
  }
  return x;
}

DatasetInfo import_npy(const std::string& out, const ImportOptions& o) {
  COHORT_CHECK(o.inputs.size() == 2, UsageError, "import npy: give INPUTS.npy and TARGETS.npy");
  const auto inputs =
      parse::parse_npy(parse::read_maybe_gz(o.inputs[0], o.max_inflate_ratio), o.inputs[0]);
  const auto targets =
      parse::parse_npy(parse::read_maybe_gz(o.inputs[1], o.max_inflate_ratio), o.inputs[1]);
  COHORT_CHECK(inputs.shape.size() >= 2, IoError, o.inputs[0], ": inputs need shape [N, ...]");
  COHORT_CHECK(targets.shape.size() == 1, IoError, o.inputs[1], ": targets need shape [N]");
  COHORT_CHECK(inputs.shape[0] == targets.shape[0], IoError, o.inputs[0], ": ", inputs.shape[0],
               " samples but ", o.inputs[1], " has ", targets.shape[0]);
  WriterSpec spec;
  spec.sample_shape.assign(inputs.shape.begin() + 1, inputs.shape.end());
  spec.split = o.split;
  spec.chunk_bytes = o.chunk_bytes;
  record_sources(spec, "npy", o.inputs);
  const auto labels = npy_to_float(targets, o.inputs[1]);
  const std::vector<double> y(labels.begin(), labels.end());
  if (inputs.dtype == DType::kUInt8 || inputs.dtype == DType::kFloat16) {
    // Stored as they come (uint8 images are scaled to [0, 1] by the reader).
    spec.input_dtype = inputs.dtype;
    return write_labelled(out, spec, inputs.data.data(), y, o.float_targets);
  }
  const auto x = npy_to_float(inputs, o.inputs[0]);
  return write_labelled(out, spec, x.data(), y, o.float_targets);
}

// A run of spaces or tabs between numbers as one comma, each line trimmed: scikit-learn's
// bundled diabetes data is separated by spaces.
std::string commas_for_spaces(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool gap = false;
  for (const char c : text) {
    if (c == ' ' || c == '\t') {
      gap = !out.empty() && out.back() != '\n';
      continue;
    }
    if (gap && c != '\n' && c != '\r') out += ',';
    gap = false;
    out += c;
  }
  return out;
}

// scikit-learn's bundled diabetes set: 442 patients, 10 raw features (age, sex, BMI, blood
// pressure, six blood serum measurements) and a disease-progression score one year later, as
// float32 regression targets with per-feature statistics (what StandardScaler would use).
DatasetInfo import_diabetes(const std::string& out, const ImportOptions& o) {
  COHORT_CHECK(o.inputs.empty() || o.inputs.size() == 2, UsageError,
               "import diabetes: give no input (scikit-learn's) or DATA and TARGET files");
  const std::string data = o.inputs.empty() ? kDiabetesData : o.inputs[0];
  const std::string target = o.inputs.empty() ? kDiabetesTarget : o.inputs[1];
  const auto x_table =
      parse::parse_csv(commas_for_spaces(parse::read_maybe_gz(data, o.max_inflate_ratio)), data);
  const auto y_table = parse::parse_csv(
      commas_for_spaces(parse::read_maybe_gz(target, o.max_inflate_ratio)), target);
  COHORT_CHECK(y_table.columns == 1 && y_table.rows == x_table.rows, IoError, target, ": ",
               y_table.rows, " rows of ", y_table.columns, " values for ", x_table.rows,
               " samples in ", data, " (one target per sample)");
  const std::vector<float> x(x_table.values.begin(), x_table.values.end());
  WriterSpec spec;
  spec.sample_shape = {x_table.columns};
  spec.split = o.split;
  spec.chunk_bytes = o.chunk_bytes;
  record_sources(spec, "diabetes (scikit-learn's bundled diabetes_data_raw, diabetes_target)",
                 {data, target});
  set_stats(spec, x, x_table.columns, true);
  return write_labelled(out, spec, x.data(), y_table.values, true);
}

// Byte-level tokens (vocabulary 256). With a SentencePiece model: import_text_tokens.
DatasetInfo import_text(const std::string& out, const ImportOptions& o) {
  COHORT_CHECK(o.tokenizer.empty(), UsageError,
               "import text --tokenizer: in the cohort command only (cohort/data/tokenizer.hpp)");
  COHORT_CHECK(!o.inputs.empty(), UsageError, "import text: give one or more text files");
  std::string text;
  for (const auto& path : o.inputs) text += parse::read_maybe_gz(path, o.max_inflate_ratio);
  COHORT_CHECK(static_cast<std::int64_t>(text.size()) > o.seq_len, IoError, o.inputs.front(), ": ",
               text.size(), " bytes, fewer than seq_len + 1 = ", o.seq_len + 1);
  WriterSpec spec;
  spec.kind = DatasetKind::kTokens;
  spec.num_tokens = static_cast<std::int64_t>(text.size());
  spec.token_dtype = DType::kUInt16;
  spec.seq_len = o.seq_len;
  spec.vocab_size = 256;  // byte-level
  spec.split = o.split;
  spec.chunk_bytes = o.chunk_bytes;
  record_sources(spec, "text (byte-level tokens)", o.inputs);
  std::vector<std::uint16_t> tokens(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) tokens[i] = static_cast<unsigned char>(text[i]);
  DatasetWriter writer(out, spec);
  writer.write_tokens(0, spec.num_tokens, tokens.data());
  return writer.commit();
}

}  // namespace

DatasetInfo import_dataset(const std::string& out, const ImportOptions& options) {
  parse::check_import_outputs(out, options);
  const auto& f = options.format;
  if (f == "fashion-mnist") return import_fashion_mnist(out, options);
  if (f == "digits") {
    ImportOptions digits = options;
    if (digits.inputs.empty()) digits.inputs = {kDigitsCsv};
    return import_csv(out, digits, "digits (scikit-learn's bundled digits.csv.gz)");
  }
  if (f == "diabetes") return import_diabetes(out, options);
  if (f == "csv") return import_csv(out, options, "csv");
  if (f == "npy") return import_npy(out, options);
  if (f == "text") return import_text(out, options);
  COHORT_THROW(UsageError, "import: unknown format '", f,
               "' (fashion-mnist, digits, diabetes, csv, npy, text)");
}

}  // namespace cohort::data
