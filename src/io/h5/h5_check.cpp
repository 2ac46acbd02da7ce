#include "io/h5/h5_check.hpp"

#include "io/h5/hid.hpp"

namespace cohort::io::h5 {

std::unique_lock<std::recursive_mutex> h5_lock() {
  static std::recursive_mutex mutex;
  std::unique_lock<std::recursive_mutex> lock(mutex);
  static const bool quiet = [] {
    // Errors are reported through exceptions with the stack's text; HDF5's own dump to stderr
    // would print a page of traces for a missing file.
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)quiet;
  return lock;
}

namespace {

herr_t keep_innermost(unsigned depth, const H5E_error2_t* entry, void* data) {
  auto* text = static_cast<std::string*>(data);
  if (depth == 0 && entry->desc != nullptr) *text = entry->desc;
  return 0;
}

}  // namespace

std::string h5_error_text() {
  auto lock = h5_lock();
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_innermost, &text);
  H5Eclear2(H5E_DEFAULT);
  return text.empty() ? std::string() : ": " + text;
}

void Hid::reset() noexcept {
  if (id_ >= 0) {
    auto lock = h5_lock();
    H5Idec_ref(id_);  // a failure here has nothing to tell the caller; the id is gone either way
    id_ = H5I_INVALID_HID;
  }
}

}  // namespace cohort::io::h5
