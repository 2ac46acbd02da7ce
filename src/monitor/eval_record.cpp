#include "cohort/monitor/eval_record.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "format.hpp"
#include "svg.hpp"

namespace cohort::monitor {
namespace {

constexpr std::size_t kMaxBytes = 16u << 20;
constexpr std::size_t kMaxClasses = 4096;
constexpr std::size_t kMatrixInReport = 50;

using Json = nlohmann::json;

const Json& field(const Json& j, const char* key, bool (Json::*is)() const noexcept,
                  const char* what, const std::string& path) {
  COHORT_CHECK(j.contains(key) && (j[key].*is)(), IoError, path, ": field '", key,
               "' is missing or not ", what);
  return j[key];
}

std::string text(const Json& j, const char* key, const std::string& path) {
  return field(j, key, &Json::is_string, "a string", path).get<std::string>();
}

std::int64_t integer(const Json& j, const char* key, const std::string& path, std::int64_t low) {
  COHORT_CHECK(!j.contains(key) || !j[key].is_number_unsigned() ||
                   j[key].get<std::uint64_t>() <= (std::uint64_t{1} << 62),
               IoError, path, ": field '", key, "' is out of range");
  const auto value =
      field(j, key, &Json::is_number_integer, "an integer", path).get<std::int64_t>();
  COHORT_CHECK(value >= low, IoError, path, ": field '", key, "' is below ", low);
  return value;
}

// A number, or null: what nlohmann writes for NaN (a model whose loss diverged).
double number(const Json& value, const std::string& what, const std::string& path) {
  COHORT_CHECK(value.is_number() || value.is_null(), IoError, path, ": ", what, " is not a number");
  return value.is_null() ? std::nan("") : value.get<double>();
}

void read_classes(const Json& j, const std::string& path, EvalRecord& r) {
  const Json& classes = field(j, "classes", &Json::is_array, "a list", path);
  const Json& matrix = field(j, "confusion", &Json::is_array, "a list", path);
  const std::size_t n = classes.size();
  COHORT_CHECK(n >= 1 && n <= kMaxClasses && matrix.size() == n, IoError, path,
               ": 'classes' and 'confusion' must list the same 1..", kMaxClasses, " classes");
  for (std::size_t c = 0; c < n; ++c) {
    COHORT_CHECK(classes[c].is_object(), IoError, path, ": classes[", c, "] is not an object");
    r.class_names.push_back(text(classes[c], "name", path));
    COHORT_CHECK(integer(classes[c], "class", path, 0) == static_cast<std::int64_t>(c), IoError,
                 path, ": classes[", c, "] says it is class ", classes[c]["class"].dump());
    const Json& row = matrix[c];
    COHORT_CHECK(row.is_array() && row.size() == n, IoError, path, ": confusion[", c,
                 "] is not a row of ", n, " counts");
    std::int64_t sum = 0;
    for (const auto& count : row) {
      COHORT_CHECK(count.is_number_integer() && count.get<std::int64_t>() >= 0 &&
                       count.get<std::int64_t>() <= (std::int64_t{1} << 52),
                   IoError, path, ": confusion[", c, "] holds a value that is not a count");
      sum += count.get<std::int64_t>();
      r.confusion.push_back(count.get<std::int64_t>());
    }
    const std::int64_t samples = integer(classes[c], "samples", path, 0);
    COHORT_CHECK(sum == samples, IoError, path, ": confusion[", c, "] sums to ", sum,
                 ", not the class's samples");
    const std::int64_t correct = row[c].get<std::int64_t>();
    COHORT_CHECK(integer(classes[c], "correct", path, 0) == correct, IoError, path, ": classes[", c,
                 "].correct is not confusion[", c, "][", c, "]");
    COHORT_CHECK(classes[c].contains("accuracy"), IoError, path, ": classes[", c,
                 "] has no accuracy");
    const double accuracy = number(classes[c]["accuracy"], "classes[].accuracy", path);
    const double want =
        samples > 0 ? static_cast<double>(correct) / static_cast<double>(samples) : std::nan("");
    COHORT_CHECK(std::isnan(want) ? std::isnan(accuracy) : std::fabs(accuracy - want) <= 1e-9,
                 IoError, path, ": classes[", c, "].accuracy is not correct / samples");
  }
}

std::string cell(const std::string& content, const char* tag = "td") {
  return std::string("<") + tag + ">" + content + "</" + tag + ">";
}

std::string matrix_html(const EvalRecord& r) {
  const std::size_t n = r.class_names.size();
  std::string s = "<table class=\"confusion\"><tr><th>true \\ predicted</th>";
  for (std::size_t p = 0; p < n; ++p) s += cell(std::to_string(p), "th");
  s += "</tr>";
  for (std::size_t c = 0; c < n; ++c) {
    std::int64_t total = 0;
    for (std::size_t p = 0; p < n; ++p) total += r.confusion[c * n + p];
    s += "<tr>" + cell(std::to_string(c) + " " + svg::escape(r.class_names[c]), "th");
    for (std::size_t p = 0; p < n; ++p) {
      const std::int64_t count = r.confusion[c * n + p];
      const double share = total > 0 ? static_cast<double>(count) / static_cast<double>(total) : 0;
      s += "<td style=\"background:rgba(" + std::string(c == p ? "44,160,44" : "214,39,40") + "," +
           format("%.2f", share) + ")\">" + std::to_string(count) + "</td>";
    }
    s += "</tr>";
  }
  return s + "</table>";
}

}  // namespace

EvalRecord read_eval_record(const std::string& path) {
  const std::string content = io::read_small_file(path, kMaxBytes);
  const Json j = Json::parse(content, nullptr, /*allow_exceptions=*/false);
  COHORT_CHECK(!j.is_discarded(), IoError, path,
               ": not JSON (nothing, a syntax error, a number out of range, or text that is "
               "not UTF-8)");
  COHORT_CHECK(j.is_object() && j.contains("format") && j["format"] == "cohort-eval", IoError, path,
               ": not a `cohort eval --json` record (format \"cohort-eval\")");
  COHORT_CHECK(integer(j, "format_version", path, 1) == 1, IoError, path,
               ": format_version is not 1 (written by a newer Cohort?)");
  EvalRecord r;
  r.file = path;
  r.model = text(j, "model", path);
  r.data = text(j, "data", path);
  r.task = text(j, "task", path);
  r.step = integer(j, "step", path, -1);
  r.samples = integer(j, "samples", path, 0);
  COHORT_CHECK(j.contains("loss"), IoError, path, ": field 'loss' is missing");
  r.loss = number(j["loss"], "field 'loss'", path);
  for (const auto& [name, value] :
       field(j, "metrics", &Json::is_object, "an object", path).items()) {
    r.metrics.emplace_back(name, number(value, "metric '" + printable(name) + "'", path));
  }
  if (j.contains("classes") || j.contains("confusion")) {
    COHORT_CHECK(r.task == "classification", IoError, path, ": a confusion matrix for task '",
                 printable(r.task), "'");
    read_classes(j, path, r);
  }
  return r;
}

std::string render_evaluations(const std::vector<EvalRecord>& records) {
  if (records.empty()) return {};
  std::string s = "\n<h2>Evaluations</h2>\n";
  for (const auto& r : records) {
    s += "<h3>" + svg::escape(r.model) + " on " + svg::escape(r.data) +
         "</h3>\n<table class=\"kv\">";
    s += "<tr><th>samples</th><td>" + std::to_string(r.samples) + " (" + svg::escape(r.task) +
         ")</td></tr><tr><th>loss</th><td>" + format("%.4f", r.loss) + "</td></tr>";
    for (const auto& [name, value] : r.metrics) {
      s += "<tr><th>" + svg::escape(name) + "</th><td>" + format("%.4f", value) + "</td></tr>";
    }
    s += "</table>\n";
    const std::size_t n = r.class_names.size();
    if (n == 0) continue;
    s += "<table class=\"classes\"><tr><th>class</th><th>samples</th><th>accuracy</th></tr>";
    for (std::size_t c = 0; c < n; ++c) {
      std::int64_t total = 0;
      for (std::size_t p = 0; p < n; ++p) total += r.confusion[c * n + p];
      const std::int64_t correct = r.confusion[c * n + c];
      s +=
          "<tr>" + cell(std::to_string(c) + " " + svg::escape(r.class_names[c])) +
          cell(std::to_string(total)) +
          cell(total > 0 ? format("%.4f", static_cast<double>(correct) / static_cast<double>(total))
                         : "-") +
          "</tr>";
    }
    s += "</table>\n";
    s += n <= kMatrixInReport
             ? matrix_html(r) + "\n"
             : "<p>" + std::to_string(n) + " classes: the confusion matrix is in " +
                   svg::escape(r.file) + "</p>\n";
  }
  return s;
}

}  // namespace cohort::monitor
