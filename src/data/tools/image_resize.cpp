// Pillow's resampling (libImaging/Resample.c, Pillow 9-11), bilinear filter, 8 bits per value:
// separable, the horizontal pass first over just the rows the vertical pass reads; each output
// value a weighted sum of a window that widens with the reduction (antialiasing), the weights
// rounded to 22-bit fixed point and the sum rounded and clipped the same way.
#include <cmath>

#include "cohort/error.hpp"
#include "data/tools/image_codec.hpp"

namespace cohort::data {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double bilinear(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// For each output position: its first input index, how many it reads, and their weights.
struct Coefficients {
  int window = 0;
  std::vector<int> first, count;
  std::vector<std::int32_t> weights;  // window per output position, fixed point
};

// The box's edges are single precision in Pillow (and so is their difference).
Coefficients coefficients(int in_size, float in0, float in1, int out_size) {
  const double scale = static_cast<double>(in1 - in0) / out_size;
  const double filter_scale = scale < 1.0 ? 1.0 : scale;
  const double reciprocal = 1.0 / filter_scale;
  const double support = 1.0 * filter_scale;  // the bilinear filter's support is 1
  Coefficients c;
  c.window = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(out_size);
  c.count.resize(out_size);
  c.weights.assign(static_cast<std::size_t>(out_size) * c.window, 0);
  std::vector<double> k(c.window);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double total = 0.0;
    for (int x = 0; x < xmax; ++x) {
      k[x] = bilinear((x + xmin - center + 0.5) * reciprocal);
      total += k[x];
    }
    for (int x = 0; x < xmax; ++x) {
      const double w = total != 0.0 ? k[x] / total : k[x];
      c.weights[static_cast<std::size_t>(xx) * c.window + x] = static_cast<std::int32_t>(
          w < 0 ? -0.5 + w * (1 << kPrecisionBits) : 0.5 + w * (1 << kPrecisionBits));
    }
    c.first[xx] = xmin;
    c.count[xx] = xmax;
  }
  return c;
}

// (Sums fit 32 bits as Pillow's do: the bilinear weights are positive and add up to 1.)
std::uint8_t clip8(std::int32_t sum) {
  if (sum >= (std::int32_t{1} << kPrecisionBits << 8)) return 255;
  if (sum <= 0) return 0;
  return static_cast<std::uint8_t>(sum >> kPrecisionBits);
}

// Rows [first_row, first_row + out.height) of in, resized along x into out. C: channels.
template <int C>
void horizontal_pass(const Image& in, int first_row, const Coefficients& ch, Image& out) {
  constexpr std::int32_t kHalf = 1 << (kPrecisionBits - 1);
  for (int y = 0; y < out.height; ++y) {
    const std::uint8_t* row = &in.pixels[static_cast<std::size_t>(y + first_row) * in.width * C];
    std::uint8_t* to = &out.pixels[static_cast<std::size_t>(y) * out.width * C];
    for (int x = 0; x < out.width; ++x) {
      const std::int32_t* k = &ch.weights[static_cast<std::size_t>(x) * ch.window];
      const std::uint8_t* p = row + static_cast<std::size_t>(ch.first[x]) * C;
      std::int32_t sum[C];
      for (int c = 0; c < C; ++c) sum[c] = kHalf;
      for (int i = 0; i < ch.count[x]; ++i) {
        for (int c = 0; c < C; ++c) sum[c] += p[i * C + c] * k[i];
      }
      for (int c = 0; c < C; ++c) to[x * C + c] = clip8(sum[c]);
    }
  }
}

// in (rows of `row` values) resized along y into out: whole rows at a time, each tap adding its
// weighted source row to an accumulator row (integer sums: the order does not change them).
void vertical_pass(const std::uint8_t* in, std::size_t row, const Coefficients& cv, Image& out) {
  std::vector<std::int32_t> sum(row);
  for (int y = 0; y < out.height; ++y) {
    std::fill(sum.begin(), sum.end(), 1 << (kPrecisionBits - 1));
    const std::int32_t* k = &cv.weights[static_cast<std::size_t>(y) * cv.window];
    for (int i = 0; i < cv.count[y]; ++i) {
      const std::uint8_t* from = in + static_cast<std::size_t>(cv.first[y] + i) * row;
      const std::int32_t weight = k[i];
      for (std::size_t v = 0; v < row; ++v) sum[v] += from[v] * weight;
    }
    std::uint8_t* to = &out.pixels[static_cast<std::size_t>(y) * row];
    for (std::size_t v = 0; v < row; ++v) to[v] = clip8(sum[v]);
  }
}

}  // namespace

Image resize_bilinear(const Image& image, int height, int width, const Box& box) {
  COHORT_CHECK(height > 0 && width > 0, UsageError, "resize: size ", height, "x", width,
               " is not positive");
  COHORT_CHECK(image.channels == 1 || image.channels == 3, UsageError, "resize: ", image.channels,
               " channels");
  const bool horizontal = width != image.width || box.x0 != 0 || box.x1 != width;
  const bool vertical = height != image.height || box.y0 != 0 || box.y1 != height;
  const Coefficients ch =
      coefficients(image.width, static_cast<float>(box.x0), static_cast<float>(box.x1), width);
  Coefficients cv =
      coefficients(image.height, static_cast<float>(box.y0), static_cast<float>(box.y1), height);
  const int channels = image.channels;
  Image temp;  // the horizontal pass's output, when there is one
  if (horizontal) {
    // Only the rows the vertical pass reads, shifted to start at 0.
    const int first_row = cv.first[0];
    const int last_row = cv.first[height - 1] + cv.count[height - 1];
    for (auto& f : cv.first) f -= first_row;
    temp = Image{last_row - first_row, width, channels, {}};
    temp.pixels.resize(static_cast<std::size_t>(temp.height) * width * channels);
    if (channels == 3) {
      horizontal_pass<3>(image, first_row, ch, temp);
    } else {
      horizontal_pass<1>(image, first_row, ch, temp);
    }
  }
  if (!vertical) return horizontal ? std::move(temp) : image;
  const Image& current = horizontal ? temp : image;
  Image out{height, current.width, channels, {}};
  out.pixels.resize(static_cast<std::size_t>(height) * current.width * channels);
  vertical_pass(current.pixels.data(), static_cast<std::size_t>(current.width) * channels, cv, out);
  return out;
}

}  // namespace cohort::data
