// Fuzz target: the restricted pickle machine that reads torch.save's data.pkl for
// model.init_from (src/ckpt/pickle_machine.cpp). Any bytes: a value or one cohort::Error, never
// a crash, a hang or an allocation the input does not back; storages come from a loader that
// holds at most 4096 elements, as a zip record of that size would.
#include <ATen/ops/zeros.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "ckpt/pickle_machine.hpp"
#include "cohort/error.hpp"
#include "fuzz_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string pickle(reinterpret_cast<const char*>(data), size);
  const auto load = [](const std::string& key, at::ScalarType dtype, std::int64_t numel) {
    COHORT_CHECK(numel <= 4096, cohort::IoError, "fuzz: storage ", key, " of ", numel,
                 " elements, more than its record holds");
    return at::zeros({numel}, at::TensorOptions().dtype(dtype));
  };
  cohort::fuzz::expect_contract([&] { cohort::ckpt::pickle::run(pickle, "fuzz/data.pkl", load); });
  return 0;
}
