// Image files to pixels: JPEG through libjpeg-turbo (the library Pillow itself uses on Debian, with
// its default DCT and upsampling, so the pixels are Pillow's), PNG through libpng; and the
// resampling of Pillow's Image.resize(BILINEAR, box) (antialiased: the filter widens with the
// reduction), in its 8-bit fixed-point arithmetic, so a resized image is Pillow's too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cohort::data {

// Interleaved rows (height x width x channels), 8 bits per value; channels 1 (grey) or 3 (RGB).
struct Image {
  int height = 0;
  int width = 0;
  int channels = 0;
  std::vector<std::uint8_t> pixels;
};

// Decodes a JPEG or PNG file into 1 or 3 channels as Pillow's convert("L") / convert("RGB") do
// (an alpha channel is dropped; 16-bit PNG samples keep their high byte; a palette is expanded).
// Throws IoError naming the file when it is not one, is corrupt, or is larger than max_pixels.
Image decode_image(const std::string& path, std::int64_t max_pixels);
// The same for a file's bytes already read; `name` is what errors call it.
Image decode_image_bytes(const std::string& bytes, const std::string& name,
                         std::int64_t max_pixels);

// Pillow's convert("L") of RGB (ITU-R 601-2 luma, its rounding) or convert("RGB") of grey; the
// image itself when it has that many channels already.
Image convert_channels(Image image, int channels);

// The region [x0, x1) x [y0, y1) of image, in pixel coordinates (fractions allowed).
struct Box {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

// Pillow's Image.resize((width, height), Image.BILINEAR, box).
Image resize_bilinear(const Image& image, int height, int width, const Box& box);

}  // namespace cohort::data
