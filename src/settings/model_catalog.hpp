// The catalog of models this process knows, without LibTorch: which names are registered (built
// in, or by a model library), the sections they declared, and the state of a library being
// loaded. The model registry (model_registry.cpp) fills it; Config::load reads it.
//
// Protocol: while load_model_library() runs dlopen, the library's static registrations reach
// add_model() with loading() true; a problem (a duplicate name, a section that clashes, another
// ABI) is recorded instead of thrown (a throw would end the process inside dlopen), and the
// loader refuses the library with the first one. Libraries are never unloaded: their models'
// code and their option tables' strings live as long as the process.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cohort/settings/config.hpp"
#include "cohort/settings/model_options.hpp"

namespace cohort::settings::catalog {

// Registers a model's name and its section (options may be null). Returns "" or why it cannot be:
// the name is taken, or is not a word ([A-Za-z_][A-Za-z0-9_]*), or is a built-in section's name.
std::string add_model(const std::string& name, const ModelOptionsTable* options);
// The table of a model's section, or nullptr (no such model, or it declared no keys).
const ModelOptionsTable* options_of(const std::string& name);
// The options struct of a section, each key's field set from text(its spec): the validated text
// of a loaded config, or the declared default.
std::shared_ptr<const void> make_options(const ModelOptionsTable& table,
                                         const std::function<std::string(const KeySpec&)>& text);
// The spec of key `key` of the section `section` declared by a registered model, or nullptr.
const KeySpec* find_key(const std::string& section, const std::string& key);
// Every declared key, section by section (its spec's section is the model's name).
std::vector<const KeySpec*> declared_keys();
// Whether a model of this name is registered (in this executable: the light `cohort` has none).
bool has_model(const std::string& name);

// A library being loaded: begin, dlopen, end. end() returns the models it registered; the
// problems recorded meanwhile, with record().
void begin_library(const std::string& path);
struct LibraryResult {
  std::vector<std::string> models;
  std::vector<std::string> problems;
};
LibraryResult end_library();
bool loading();
void record(const std::string& problem);
// The models that libraries registered, "name (library)" each.
std::vector<std::string> models_from_libraries();
// The library a model came from ("" for one compiled into the program).
std::string library_of(const std::string& name);

// The loader Config::load calls for each entry of model.library: installed by model_library.cpp,
// which only executables with LibTorch link; null in the light `cohort`.
using LibraryLoader = void (*)(const std::string& path, const std::string& where);
LibraryLoader library_loader();
bool set_library_loader(LibraryLoader loader);

}  // namespace cohort::settings::catalog
