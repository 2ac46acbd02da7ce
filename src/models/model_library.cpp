// The loader of model.library's shared libraries (docs/models.md, "C++ models"): dlopen, then the
// checks that refuse a library in one line naming the file. Linked only into executables with
// LibTorch (libcohort): its static initializer installs it as Config::load's loader.
#include <dlfcn.h>

#include <filesystem>
#include <set>
#include <string>

#include "cohort/error.hpp"
#include "settings/model_catalog.hpp"

namespace cohort::models {

// The run's settings by their own names.
using namespace ::cohort::settings;  // NOLINT(google-build-using-namespace)

namespace {

namespace fs = std::filesystem;

// Loads `path` once; throws ConfigError prefixed with `where` ("job.ini:3: model.library").
void load_model_library(const std::string& path, const std::string& where) {
  static std::set<std::string> loaded;
  std::error_code error;
  COHORT_CHECK(fs::is_regular_file(path, error), ConfigError, where, ": ", path,
               ": no such library (a shared library file; docs/models.md, \"C++ models\")");
  const std::string canonical = fs::canonical(path, error).string();
  COHORT_CHECK(!error, ConfigError, where, ": ", path, ": ", error.message());
  if (!loaded.insert(canonical).second) return;
  // A path, never a bare name: dlopen would search LD_LIBRARY_PATH and the system for one.
  catalog::begin_library(canonical);
  // RTLD_NOW: a symbol the library needs and this Cohort lacks fails here, not mid-training.
  void* handle = dlopen(canonical.c_str(), RTLD_NOW | RTLD_LOCAL);
  const auto result = catalog::end_library();
  if (handle == nullptr) {
    const char* why = dlerror();
    COHORT_THROW(ConfigError, where, ": ", path,
                 ": cannot be loaded: ", why != nullptr ? why : "dlopen failed",
                 " (built against another Cohort or LibTorch? rebuild it against this one)");
  }
  // The library stays loaded for good: its models' code and tables must outlive every use.
  COHORT_CHECK(result.problems.empty(), ConfigError, where, ": ", path,
               ": refused: ", result.problems.empty() ? "" : result.problems.front());
  COHORT_CHECK(
      !result.models.empty(), ConfigError, where, ": ", path,
      ": registers no model (a model library calls COHORT_REGISTER_MODEL; docs/models.md)");
}

const bool kInstalled = catalog::set_library_loader(&load_model_library);

}  // namespace
}  // namespace cohort::models
