// Fuzz target: a checkpoint's manifest.json (Manifest::parse) and the step-directory names that
// retention and resume look at (parse_step_dir_name, is_partial_save_name). A manifest that
// parses must describe slices that cover each tensor exactly, within 64-bit sizes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cohort/ckpt/manifest.hpp"
#include "fuzz_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  cohort::fuzz::expect_contract([&] {
    const auto m = cohort::ckpt::Manifest::parse(text, "fuzz/manifest.json");
    for (const auto& t : m.tensors) {
      std::int64_t covered = 0;
      for (const auto& s : t.slices) covered += s.count;  // parse() bounded every sum
      if (t.numel() < 0 || covered != t.numel()) std::abort();
    }
  });
  if (const auto step = cohort::ckpt::parse_step_dir_name(text)) {
    if (cohort::ckpt::step_dir_name(*step) != text) std::abort();  // only exact names
  }
  if (cohort::ckpt::is_partial_save_name(text) && text.find('/') != std::string::npos) {
    std::abort();
  }
  return 0;
}
