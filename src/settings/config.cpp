#include "cohort/settings/config.hpp"

#include <algorithm>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/parsers.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "cohort/config.hpp"
#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/input.hpp"
#include "settings/model_catalog.hpp"

namespace po = boost::program_options;

namespace cohort::settings {
namespace {

std::string full_name(const KeySpec& spec) { return std::string(spec.section) + "." + spec.key; }

const KeySpec* find_spec(const std::string& name) {
  for (const auto& spec : config_table()) {
    if (full_name(spec) == name) return &spec;
  }
  const auto dot = name.find('.');
  if (dot == std::string::npos) return nullptr;
  return catalog::find_key(name.substr(0, dot), name.substr(dot + 1));
}

// Every key: the table's, then those the registered models declared for their sections.
std::vector<const KeySpec*> all_specs() {
  std::vector<const KeySpec*> specs;
  for (const auto& spec : config_table()) specs.push_back(&spec);
  for (const KeySpec* spec : catalog::declared_keys()) specs.push_back(spec);
  return specs;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// "; did you mean 'optim.lr'?" for the nearest key, if any is near.
std::string suggestion(const std::string& name) {
  const KeySpec* best = nullptr;
  std::size_t best_distance = 0;
  for (const KeySpec* spec : all_specs()) {
    const std::size_t d = edit_distance(name, full_name(*spec));
    if (best == nullptr || d < best_distance) {
      best = spec;
      best_distance = d;
    }
  }
  if (best == nullptr || best_distance > std::max<std::size_t>(3, name.size() / 3)) return "";
  return "; did you mean '" + full_name(*best) + "'?";
}

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// The line of each "section.key" in an INI file (the last one, which is the one that counts).
std::map<std::string, int> key_lines(std::istream& in) {
  std::map<std::string, int> lines;
  std::string line, section;
  for (int number = 1; std::getline(in, line); ++number) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    if (line.front() == '[' && line.back() == ']') {
      section = trim(line.substr(1, line.size() - 2));
    } else if (line.find('=') != std::string::npos) {
      const std::string key = trim(line.substr(0, line.find('=')));
      lines[section.empty() ? key : section + "." + key] = number;
    }
  }
  return lines;
}

bool parse_bool(const std::string& text, bool& out) {
  for (const char* t : {"true", "1", "yes", "on"}) {
    if (text == t) return out = true;
  }
  for (const char* f : {"false", "0", "no", "off"}) {
    if (text == f) {
      out = false;
      return true;
    }
  }
  return false;
}

bool is_int(const std::string& text) {
  // The whole text (an embedded NUL ended strtoll's view of it early), no clamp to 2^63-1.
  char* end = nullptr;
  errno = 0;
  std::strtoll(text.c_str(), &end, 10);
  return !text.empty() && end == text.c_str() + text.size() && errno != ERANGE;
}

// The whole text is one finite number.
bool is_number(const std::string& text, double& value) {
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size() && std::isfinite(value);
}

// "1..4096", "0..", "..1": a key's range as the reference and the errors show it.
std::string range_text(const KeySpec& spec) {
  const auto bound = [](double v) {
    if (v == std::floor(v) && std::abs(v) < 1e15) return std::to_string(static_cast<long long>(v));
    std::ostringstream out;
    out << v;
    return out.str();
  };
  return (spec.min > -kNoLimit ? bound(spec.min) : "") + ".." +
         (spec.max < kNoLimit ? bound(spec.max) : "");
}

void check_range(const KeySpec& spec, double value, const std::string& text,
                 const std::string& where) {
  COHORT_CHECK(value >= spec.min && value <= spec.max, ConfigError, where, ": ", text,
               " is outside ", range_text(spec));
}

// Checks text against the key's type and returns it in canonical form; throws ConfigError
// prefixed with `where`.
std::string validate(const KeySpec& spec, const std::string& raw, const std::string& where) {
  const std::string text = trim(raw);
  switch (spec.type) {
    case KeyType::kInt:
      COHORT_CHECK(is_int(text), ConfigError, where, ": '", text, "' is not an integer");
      check_range(spec, static_cast<double>(std::stoll(text)), text, where);
      return text;
    case KeyType::kFloat: {
      double value = 0;
      COHORT_CHECK(is_number(text, value), ConfigError, where, ": '", text, "' is not a number");
      check_range(spec, value, text, where);
      return text;
    }
    case KeyType::kBool: {
      bool value = false;
      COHORT_CHECK(parse_bool(text, value), ConfigError, where, ": '", text,
                   "' is not a boolean (true/false)");
      return value ? "true" : "false";
    }
    case KeyType::kChoice: {
      std::istringstream choices(spec.choices);
      for (std::string choice; std::getline(choices, choice, '|');) {
        if (choice == text) return text;
      }
      COHORT_THROW(ConfigError, where, ": '", text, "' is not one of ", spec.choices);
    }
    case KeyType::kIntList: {
      std::istringstream items(text);
      for (std::string item; std::getline(items, item, ',');) {
        COHORT_CHECK(is_int(trim(item)), ConfigError, where, ": '", text,
                     "' is not a comma-separated list of integers");
        check_range(spec, static_cast<double>(std::stoll(trim(item))), trim(item), where);
      }
      return text;
    }
    case KeyType::kFloatList: {
      std::istringstream items(text);
      for (std::string item; std::getline(items, item, ',');) {
        double number = 0;
        COHORT_CHECK(is_number(trim(item), number), ConfigError, where, ": '", text,
                     "' is not a comma-separated list of numbers");
        check_range(spec, number, trim(item), where);
      }
      return text;
    }
    case KeyType::kString:
      return text;
  }
  return text;
}

// Where each key got its value, for errors: "job.ini:12: optim.lr", "--set optim.lr", or
// "optim.lr (default)".
using Origins = std::map<std::string, std::string>;

// A config file larger than this is refused before it is read.
constexpr std::int64_t kMaxConfigFileBytes = std::int64_t{16} << 20;

// One key as given, not yet validated: the model libraries it names must load first.
struct Given {
  std::string name;
  std::string value;
  std::string where;
};

std::vector<Given> read_file(const std::string& file) {
  // Read once through the one way in: a FIFO does not block, a directory says what it is.
  std::istringstream in(io::InputFile::open<ConfigError>(file, kMaxConfigFileBytes).read_all());
  const auto lines = key_lines(in);
  in.clear();
  in.seekg(0);
  po::options_description none;
  po::parsed_options parsed(&none);
  try {
    parsed = po::parse_config_file(in, none, /*allow_unregistered=*/true);
  } catch (const po::error& error) {
    COHORT_THROW(ConfigError, file, ": ", error.what());
  }
  std::vector<Given> given;
  for (const auto& option : parsed.options) {
    const auto line = lines.find(option.string_key);
    given.push_back({option.string_key, option.value.empty() ? "" : option.value.front(),
                     file + ":" + (line == lines.end() ? "?" : std::to_string(line->second)) +
                         ": " + option.string_key});
  }
  return given;
}

Given read_override(const std::string& item) {
  const auto equals = item.find('=');
  COHORT_CHECK(equals != std::string::npos, ConfigError, "--set '", item,
               "': expected section.key=value");
  const std::string name = trim(item.substr(0, equals));
  return {name, item.substr(equals + 1), "--set " + name};
}

// Loads the libraries of model.library (the last value given), so that their models' sections
// are known. Returns false when this executable cannot load them (the light `cohort`).
bool load_libraries(const std::vector<Given>& given) {
  const Given* library = nullptr;
  for (const auto& g : given) {
    if (g.name == "model.library") library = &g;
  }
  if (library == nullptr || trim(library->value).empty()) return true;
  const auto loader = catalog::library_loader();
  if (loader == nullptr) return false;
  std::istringstream paths(library->value);
  for (std::string path; std::getline(paths, path, ',');) {
    if (!trim(path).empty()) loader(trim(path), library->where);
  }
  return true;
}

// The sections of the models model.library names, which the light `cohort` cannot check.
bool built_in_section(const std::string& name) {
  const auto& sections = config_sections();
  return std::find(sections.begin(), sections.end(), name.substr(0, name.find('.'))) !=
         sections.end();
}

// Builds the options struct of the selected model from its section's validated text.
std::shared_ptr<const void> model_options(const std::string& model,
                                          const std::map<std::string, std::string>& text) {
  const ModelOptionsTable* table = catalog::options_of(model);
  if (table == nullptr) return nullptr;
  return catalog::make_options(
      *table, [&](const KeySpec& spec) { return text.at(model + "." + spec.key); });
}

}  // namespace

std::string TrainConfig::checkpoint_dir() const {
  return checkpoint.dir.empty() ? train.run_dir + "/checkpoints" : checkpoint.dir;
}

Config Config::load(const std::string& file, const std::vector<std::string>& overrides) {
  std::vector<Given> given = file.empty() ? std::vector<Given>{} : read_file(file);
  for (const auto& item : overrides) given.push_back(read_override(item));
  const bool libraries_known = load_libraries(given);
  Config config;
  Origins origins;
  for (const KeySpec* spec : all_specs()) {
    const std::string name = full_name(*spec);
    origins[name] = name + " (default " + spec->default_value + ")";
    // A model's declared default is checked like a value: the library's author can err too.
    config.text_[name] = validate(*spec, spec->default_value, origins[name]);
  }
  for (const auto& g : given) {
    const KeySpec* spec = find_spec(g.name);
    if (spec == nullptr && !libraries_known && !built_in_section(g.name)) continue;
    COHORT_CHECK(spec != nullptr, ConfigError, g.where, ": unknown key", suggestion(g.name));
    config.text_[g.name] = validate(*spec, g.value, g.where);
    origins[g.name] = g.where;
  }
  for (const auto& spec : config_table()) {
    spec.ref.set(config, spec, config.text_.at(full_name(spec)));
  }
  config.model.options = model_options(config.model.name, config.text_);
  for (const auto& rule : config_rules()) {
    const std::string problem = rule.problem(config);
    COHORT_CHECK(problem.empty(), ConfigError, origins.at(rule.key), ": ", problem);
  }
  return config;
}

std::string Config::resolved_ini() const {
  std::ostringstream out;
  out << "# resolved by cohort " << COHORT_VERSION << " (defaults included); " << hash() << "\n";
  std::string section;
  for (const KeySpec* spec : resolved_specs()) {
    if (section != spec->section) {
      section = spec->section;
      out << "\n[" << section << "]\n";
    }
    out << "# " << spec->help << "\n" << spec->key << " = " << text_.at(full_name(*spec)) << "\n";
  }
  return out.str();
}

std::string Config::hash() const {
  std::string keys;
  for (const KeySpec* spec : resolved_specs()) {
    keys += full_name(*spec) + "=" + text_.at(full_name(*spec)) + "\n";
  }
  return io::bytes_checksum(keys.data(), keys.size());
}

std::vector<const KeySpec*> Config::resolved_specs() const {
  std::vector<const KeySpec*> specs;
  for (const auto& section : config_sections()) {
    for (const auto& spec : config_table()) {
      if (section == spec.section) specs.push_back(&spec);
    }
  }
  // The model libraries' sections this config loaded (a built-in model's config has none, so
  // its hash is what it was before libraries existed).
  for (const KeySpec* spec : catalog::declared_keys()) {
    if (text_.count(full_name(*spec)) != 0) specs.push_back(spec);
  }
  return specs;
}

std::string reference_markdown() {
  static const char* kTypes[] = {"int",    "float",    "bool",      "string",
                                 "choice", "int list", "float list"};
  std::ostringstream out;
  out << "# Configuration reference\n\n"
      << "Generated from the table in `src/settings/config_table.cpp` by `cohort config "
         "reference`; the test\n`cli.config_reference` keeps this page equal to it. Files are "
         "INI (`[section]`, `key = value`, `#`\ncomments); `--set section.key=value` overrides "
         "a file; `cohort config check FILE` validates one\nand prints it resolved, every key "
         "with its value, and the hash that identifies it.\n"
      << "\n**Paths.** A relative path in a file or a `--set` is taken from the working "
         "directory of the\ncommand (where `cohort train` or `cohort launch` runs; in a batch "
         "job, the directory `sbatch` was\ncalled from), not from the config file's directory; "
         "`monitor.prom_file` and\n`monitor.tensorboard_dir` are relative to `train.run_dir`. "
         "The inputs (`data.path`, `data.val_path`,\n`model.file`, `data.transform`) are "
         "checked before any rank starts: an error names the key, the\npath as written, the "
         "absolute path tried and what is there; a raw source where a dataset is\nexpected "
         "(IDX/.gz, an image, `.npy`, CSV, text) names the `cohort data import` that makes "
         "one.\n";
  for (const auto& section : config_sections()) {
    out << "\n## [" << section << "]\n\n";
    bool any = false;
    for (const auto& spec : config_table()) {
      if (section != spec.section) continue;
      if (!any) out << "| key | type | default | meaning |\n|---|---|---|---|\n";
      any = true;
      std::string type = kTypes[static_cast<int>(spec.type)];
      if (*spec.choices != '\0') {
        std::string choices = spec.choices;  // a|b|c -> a, b, c (a bare | would split the cell)
        for (std::size_t at = choices.find('|'); at != std::string::npos; at = choices.find('|')) {
          choices.replace(at, 1, ", ");
        }
        // A string key's choices are its usual values (model.name: the built-in models).
        type =
            spec.type == KeyType::kChoice ? "one of: " + choices : type + "; built in: " + choices;
      }
      if (spec.min > -kNoLimit || spec.max < kNoLimit) type += ", " + range_text(spec);
      const std::string value = *spec.default_value ? std::string("`") + spec.default_value + "`"
                                                    : std::string("(empty)");
      out << "| `" << spec.key << "` | " << type << " | " << value << " | " << spec.help << " |\n";
    }
    if (!any) out << "No keys yet: the issue that builds this part adds them.\n";
  }
  out << "\n## Rules between keys\n\nChecked at load, after every key has its value; an error "
         "names the file and line\nwhere the key on the left was set.\n\n";
  for (const auto& rule : config_rules()) out << "- `" << rule.key << "`: " << rule.rule << "\n";
  return out.str();
}

}  // namespace cohort::settings
