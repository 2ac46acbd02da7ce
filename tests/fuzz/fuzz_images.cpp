// Fuzz target: image decoding and resampling (`cohort data import images`). The first two bytes
// pick an output size, the rest is the file. What decodes must hold exactly height x width x
// channels values; its resize must hold the size asked for.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "data/tools/image_codec.hpp"
#include "fuzz_contract.hpp"

namespace data = cohort::data;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size < 2) return 0;
  const int height = 1 + bytes[0] % 40, width = 1 + bytes[1] % 40;
  const std::string file(reinterpret_cast<const char*>(bytes) + 2, size - 2);
  cohort::fuzz::expect_contract([&] {
    // A small pixel bound, so that a header promising a huge image is refused, not allocated.
    const auto image = data::decode_image_bytes(file, "fuzz.img", 1 << 20);
    if (image.pixels.size() !=
        static_cast<std::size_t>(image.height) * image.width * image.channels) {
      std::abort();
    }
    const auto grey = data::convert_channels(image, 1);
    const auto sized = data::resize_bilinear(
        grey, height, width, data::Box{0, 0, double(grey.width), double(grey.height)});
    if (sized.height != height || sized.width != width ||
        sized.pixels.size() != static_cast<std::size_t>(height) * width) {
      std::abort();
    }
  });
  return 0;
}
