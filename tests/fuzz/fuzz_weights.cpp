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

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string weights_file = cohort::fuzz::scratch_path("weights", ".pt");
  cohort::fuzz::write_scratch(weights_file, data, size);
  cohort::fuzz::expect_contract([&] {
    const auto weights = cohort::ckpt::read_torch_save(weights_file);
    if (weights.source != weights_file) std::abort();
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
