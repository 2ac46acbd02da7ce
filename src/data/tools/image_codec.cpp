#include "data/tools/image_codec.hpp"

// libjpeg's and libpng's C error handling is setjmp/longjmp: each decoder below keeps only
// trivially destructible state in the frame that calls setjmp, so the jump skips no destructor.
#include <jpeglib.h>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstring>

#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "common/checked_math.hpp"

namespace cohort::data {
namespace {

// An image file is read whole: a larger one is refused (a 64 Mpx JPEG is some 30 MB).
constexpr std::size_t kMaxFileBytes = std::size_t{256} << 20;

// A progressive JPEG of a few hundred bytes can hold thousands of scans, each a pass over the
// whole image: libjpeg-turbo's own tools stop at 500 (TJPARAM_SCANLIMIT); so does this.
constexpr int kMaxJpegScans = 500;

struct JpegErrors {
  jpeg_error_mgr manager;
  jpeg_progress_mgr progress;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void jpeg_fail(j_common_ptr info) {
  auto* errors = reinterpret_cast<JpegErrors*>(info->err);
  (*info->err->format_message)(info, errors->message);
  std::longjmp(errors->jump, 1);
}

// A corrupt-data warning (a truncated file, a bad Huffman code) makes libjpeg fill in grey and go
// on; Pillow refuses such a file, and so does this, at once (no more work on a corrupt file).
void jpeg_warn(j_common_ptr info, int level) {
  if (level < 0) jpeg_fail(info);
}

void jpeg_scans(j_common_ptr info) {
  auto* decompress = reinterpret_cast<j_decompress_ptr>(info);
  if (decompress->input_scan_number <= kMaxJpegScans) return;
  auto* errors = reinterpret_cast<JpegErrors*>(info->err);
  std::snprintf(errors->message, sizeof errors->message, "more than %d scans", kMaxJpegScans);
  std::longjmp(errors->jump, 1);
}

// Decodes into out; returns false with errors->message set on failure.
bool decode_jpeg(const std::string& bytes, std::int64_t max_pixels, JpegErrors* errors,
                 Image* out) {
  jpeg_decompress_struct info;
  info.err = jpeg_std_error(&errors->manager);
  errors->manager.error_exit = jpeg_fail;
  errors->manager.emit_message = jpeg_warn;
  errors->progress = {};
  errors->progress.progress_monitor = jpeg_scans;
  if (setjmp(errors->jump)) {
    jpeg_destroy_decompress(&info);
    return false;
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  info.progress = &errors->progress;
  jpeg_read_header(&info, TRUE);
  // The size the header claims, before libjpeg allocates for it (a progressive file's whole
  // coefficient buffer comes with jpeg_start_decompress); and its memory bounded by the same
  // claim, so that what the header does not say (sampling, scans) cannot take more: beyond it
  // libjpeg stops with an error (it has no backing store), not the host's memory.
  if (std::int64_t{info.image_width} * info.image_height > max_pixels) {
    std::snprintf(errors->message, sizeof errors->message, "%ux%u pixels, more than %lld",
                  info.image_width, info.image_height, static_cast<long long>(max_pixels));
    jpeg_destroy_decompress(&info);
    return false;
  }
  info.mem->max_memory_to_use =
      static_cast<long>(std::int64_t{info.image_width} * info.image_height * 16 + (64 << 20));
  if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
    std::snprintf(errors->message, sizeof errors->message, "CMYK JPEG is not supported");
    jpeg_destroy_decompress(&info);
    return false;
  }
  const bool grey = info.num_components == 1;
  info.out_color_space = grey ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&info);
  const std::int64_t pixels = std::int64_t{info.output_width} * info.output_height;
  if (pixels > max_pixels) {
    std::snprintf(errors->message, sizeof errors->message, "%ux%u pixels, more than %lld",
                  info.output_width, info.output_height, static_cast<long long>(max_pixels));
    jpeg_destroy_decompress(&info);
    return false;
  }
  out->height = static_cast<int>(info.output_height);
  out->width = static_cast<int>(info.output_width);
  out->channels = info.output_components;
  const std::size_t row = static_cast<std::size_t>(out->width) * out->channels;
  out->pixels.resize(row * static_cast<std::size_t>(out->height));
  while (info.output_scanline < info.output_height) {
    JSAMPROW rows[1] = {out->pixels.data() + row * info.output_scanline};
    jpeg_read_scanlines(&info, rows, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return true;
}

struct PngSource {
  const std::string* bytes;
  std::size_t offset;
  char message[256];
};

void png_read_bytes(png_structp png, png_bytep data, png_size_t length) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (length > source->bytes->size() - source->offset) png_error(png, "the file is truncated");
  std::memcpy(data, source->bytes->data() + source->offset, length);
  source->offset += length;
}

[[noreturn]] void png_fail(png_structp png, png_const_charp message) {
  auto* source = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(source->message, sizeof source->message, "%s", message);
  png_longjmp(png, 1);
}

void png_warn(png_structp, png_const_charp) {}  // benign (e.g. an unknown chunk's CRC)

bool decode_png(const std::string& bytes, std::int64_t max_pixels, PngSource* source, Image* out) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, source, png_fail, png_warn);
  if (png == nullptr) return false;
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, source, png_read_bytes);
  png_read_info(png, info);
  const auto width = png_get_image_width(png, info), height = png_get_image_height(png, info);
  if (std::int64_t{width} * height > max_pixels) {
    std::snprintf(source->message, sizeof source->message, "%ux%u pixels, more than %lld", width,
                  height, static_cast<long long>(max_pixels));
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  const int type = png_get_color_type(png, info);
  if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (type == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8) {
    png_set_expand_gray_1_2_4_to_8(png);
  }
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_read_update_info(png, info);
  out->height = static_cast<int>(height);
  out->width = static_cast<int>(width);
  out->channels = png_get_channels(png, info);
  const std::size_t row = static_cast<std::size_t>(out->width) * out->channels;
  out->pixels.resize(row * static_cast<std::size_t>(out->height));
  const int passes = png_set_interlace_handling(png);
  for (int pass = 0; pass < passes; ++pass) {
    for (std::size_t y = 0; y < height; ++y)
      png_read_row(png, out->pixels.data() + y * row, nullptr);
  }
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

}  // namespace

Image decode_image(const std::string& path, std::int64_t max_pixels) {
  return decode_image_bytes(io::read_small_file(path, kMaxFileBytes), path, max_pixels);
}

Image decode_image_bytes(const std::string& bytes, const std::string& path,
                         std::int64_t max_pixels) {
  Image image;
  const bool jpeg = bytes.size() >= 3 && bytes.compare(0, 3, "\xff\xd8\xff") == 0;
  const bool png =
      bytes.size() >= 8 && bytes.compare(0, 8, std::string("\x89PNG\r\n\x1a\n", 8)) == 0;
  COHORT_CHECK(jpeg || png, IoError, path, ": not a JPEG or PNG file");
  if (jpeg) {
    JpegErrors errors{};
    COHORT_CHECK(decode_jpeg(bytes, max_pixels, &errors, &image), IoError, path, ": corrupt JPEG (",
                 errors.message, ")");
  } else {
    PngSource source{&bytes, 0, {}};
    COHORT_CHECK(decode_png(bytes, max_pixels, &source, &image), IoError, path, ": corrupt PNG (",
                 source.message, ")");
  }
  COHORT_CHECK(image.channels == 1 || image.channels == 3, IoError, path, ": ", image.channels,
               " channels after decoding (expected 1 or 3)");
  return image;
}

Image convert_channels(Image image, int channels) {
  if (image.channels == channels) return image;
  Image out{image.height, image.width, channels, {}};
  const std::size_t n = static_cast<std::size_t>(image.height) * image.width;
  out.pixels.resize(n * channels);
  for (std::size_t i = 0; i < n; ++i) {
    if (channels == 3) {
      std::fill_n(out.pixels.begin() + i * 3, 3, image.pixels[i]);
    } else {
      const std::uint8_t* rgb = &image.pixels[i * 3];
      out.pixels[i] = static_cast<std::uint8_t>(
          (rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16);  // Pillow's L24
    }
  }
  return out;
}

}  // namespace cohort::data
