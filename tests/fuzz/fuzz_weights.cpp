// Fuzz target: a torch.save zip file as model.init_from reads it (read_torch_save,
// src/ckpt/torch_pickle.cpp): the zip's end record and central directory (zip64 included), each
// record's place from its local header, data.pkl, and the storages the pickle names
// (fuzz_pickle fuzzes the pickle machine alone). Every record read lies inside the file: one
// claiming bytes past its end, a directory past its end, a compressed record is one IoError, never
// a read into a tensor shorter than the record. What reads is a state_dict: each entry a defined
// tensor whose storage holds all its elements (its first and last byte are read here, under ASan).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cohort/ckpt/weights.hpp"
#include "fuzz_contract.hpp"

namespace {

const std::string& weights_file() {
  static const std::string path = std::filesystem::temp_directory_path().string() +
                                  "/cohort-fuzz-weights-" + std::to_string(::getpid()) + ".pt";
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    std::ofstream out(weights_file(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  cohort::fuzz::expect_contract([&] {
    const auto weights = cohort::ckpt::read_torch_save(weights_file());
    if (weights.source != weights_file()) std::abort();
    for (const auto& [name, tensor] : weights.tensors) {
      if (!tensor.defined()) std::abort();
      const auto& storage = tensor.storage();
      const std::size_t bytes = storage.nbytes();
      if (bytes < static_cast<std::size_t>(tensor.numel()) * tensor.element_size()) std::abort();
      if (bytes == 0) continue;
      const auto* first = static_cast<const volatile unsigned char*>(storage.data());
      (void)first[0];
      (void)first[bytes - 1];
    }
  });
  return 0;
}
