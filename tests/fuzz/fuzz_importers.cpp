// Fuzz target: the importers' source parsers (IDX, NumPy .npy, CSV). The first byte picks the
// parser, the rest is the file. What parses must hold exactly the bytes its header promises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "data/tools/parsers.hpp"
#include "fuzz_contract.hpp"

namespace parse = cohort::data::parse;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  cohort::fuzz::expect_contract([&] {
    switch (data[0] % 3) {
      case 0: {
        const auto a = parse::parse_idx(bytes, "fuzz.idx");
        std::uint64_t n = 1;
        for (const auto d : a.dims) n *= static_cast<std::uint64_t>(d);
        if (n != a.data.size()) std::abort();
        break;
      }
      case 1: {
        const auto a = parse::parse_npy(bytes, "fuzz.npy");
        std::uint64_t n = cohort::data::dtype_size(a.dtype);
        for (const auto d : a.shape) n *= static_cast<std::uint64_t>(d);
        if (n != a.data.size()) std::abort();
        break;
      }
      default: {
        const auto t = parse::parse_csv(bytes, "fuzz.csv");
        if (static_cast<std::int64_t>(t.values.size()) != t.rows * t.columns) std::abort();
      }
    }
  });
  return 0;
}
