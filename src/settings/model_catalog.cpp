// The catalog of registered models and their sections (model_catalog.hpp says the protocol).
#include "settings/model_catalog.hpp"

#include <algorithm>
#include <cctype>
#include <list>
#include <map>

namespace cohort::settings::catalog {
namespace {

struct Entry {
  std::string name;
  std::string library;
  ModelOptionsTable options;  // no keys: the model declared no section
};

struct State {
  std::list<Entry> models;  // a list: the specs' section pointers point into its names
  std::string library;      // the library being loaded, or ""
  bool loading = false;
  std::vector<std::string> loaded_models;
  std::vector<std::string> problems;
  LibraryLoader loader = nullptr;
};

State& state() {
  static State s;
  return s;
}

Entry* find(const std::string& name) {
  for (auto& entry : state().models) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

bool is_word(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

std::string add_model(const std::string& name, const ModelOptionsTable* options) {
  if (!is_word(name)) return "'" + name + "' is not a model name (letters, digits, _)";
  if (Entry* other = find(name)) {
    return "model '" + name + "' is registered twice (" +
           (other->library.empty() ? std::string("built in") : "by " + other->library) + ")";
  }
  const auto& sections = config_sections();
  if (options != nullptr && !options->keys.empty() &&
      std::find(sections.begin(), sections.end(), name) != sections.end()) {
    return "model '" + name + "' cannot own the section [" + name + "] (a built-in section)";
  }
  State& s = state();
  Entry& entry = s.models.emplace_back();
  entry.name = name;
  entry.library = s.library;
  if (options != nullptr && !options->keys.empty()) {
    entry.options = *options;
    for (auto& key : entry.options.keys) key.spec.section = entry.name.c_str();
  }
  if (s.loading) s.loaded_models.push_back(name);
  return "";
}

const ModelOptionsTable* options_of(const std::string& name) {
  const Entry* entry = find(name);
  return entry != nullptr && !entry->options.keys.empty() ? &entry->options : nullptr;
}

std::shared_ptr<const void> make_options(const ModelOptionsTable& table,
                                         const std::function<std::string(const KeySpec&)>& text) {
  auto options = table.make();
  for (const auto& key : table.keys) key.set(options.get(), text(key.spec));
  return options;
}

const KeySpec* find_key(const std::string& section, const std::string& key) {
  const Entry* entry = find(section);
  if (entry == nullptr) return nullptr;
  for (const auto& k : entry->options.keys) {
    if (key == k.spec.key) return &k.spec;
  }
  return nullptr;
}

std::vector<const KeySpec*> declared_keys() {
  std::vector<const KeySpec*> keys;
  for (const auto& entry : state().models) {
    for (const auto& k : entry.options.keys) keys.push_back(&k.spec);
  }
  return keys;
}

bool has_model(const std::string& name) { return find(name) != nullptr; }

std::vector<std::string> models_from_libraries() {
  std::vector<std::string> models;
  for (const auto& entry : state().models) {
    if (!entry.library.empty()) models.push_back(entry.name + " (" + entry.library + ")");
  }
  return models;
}

std::string library_of(const std::string& name) {
  const Entry* entry = find(name);
  return entry != nullptr ? entry->library : "";
}

void begin_library(const std::string& path) {
  State& s = state();
  s.library = path;
  s.loading = true;
  s.loaded_models.clear();
  s.problems.clear();
}

LibraryResult end_library() {
  State& s = state();
  LibraryResult result{std::move(s.loaded_models), std::move(s.problems)};
  s.library.clear();
  s.loading = false;
  s.loaded_models.clear();
  s.problems.clear();
  return result;
}

bool loading() { return state().loading; }

void record(const std::string& problem) { state().problems.push_back(problem); }

LibraryLoader library_loader() { return state().loader; }

bool set_library_loader(LibraryLoader loader) {
  state().loader = loader;
  return true;
}

}  // namespace cohort::settings::catalog
