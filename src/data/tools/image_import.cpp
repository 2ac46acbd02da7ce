#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "cohort/comm/allocator.hpp"
#include "cohort/data/images.hpp"
#include "cohort/data/writer.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/output.hpp"
#include "cohort/io/unique_fd.hpp"
#include "data/tools/image_codec.hpp"

namespace cohort::data {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kSkippedShown = 5;
constexpr std::int64_t kMaxSampleBytes = std::int64_t{1} << 28;

struct Listed {
  std::string path;      // as opened
  std::string relative;  // CLASS/..., what the validation hash reads
  std::int64_t label = 0;
};

bool image_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

// One class folder's images, ordered as ImageFolder walks them: by folder, then by name.
std::vector<std::pair<std::string, std::string>> class_images(const fs::path& folder) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    if (entry.is_regular_file() && image_extension(entry.path())) {
      files.emplace_back(entry.path().parent_path().string(), entry.path().filename().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<Listed> list_images_in(const std::string& dir, std::vector<std::string>& classes) {
  std::error_code error;
  COHORT_CHECK(fs::is_directory(dir, error), IoError, dir, ": not a directory");
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory()) classes.push_back(entry.path().filename().string());
  }
  std::sort(classes.begin(), classes.end());
  COHORT_CHECK(!classes.empty(), IoError, dir,
               ": no class folders (expected DIR/CLASS/IMAGE.jpg|png, torchvision's ImageFolder)");
  std::vector<Listed> images;
  for (std::size_t label = 0; label < classes.size(); ++label) {
    const fs::path folder = fs::path(dir) / classes[label];
    const auto files = class_images(folder);
    COHORT_CHECK(!files.empty(), IoError, folder.string(), ": class '", classes[label],
                 "' holds no .jpg, .jpeg or .png file");
    for (const auto& [parent, name] : files) {
      const fs::path path = fs::path(parent) / name;
      images.push_back({path.string(), fs::path(path).lexically_relative(dir).string(),
                        static_cast<std::int64_t>(label)});
    }
  }
  return images;
}

std::vector<Listed> list_images(const std::string& dir, std::vector<std::string>& classes) {
  try {
    return list_images_in(dir, classes);
  } catch (const fs::filesystem_error& error) {
    COHORT_THROW(IoError, error.path1().string(), ": ", error.code().message());
  }
}

// Decoded samples until their number is known: an unlinked temporary file beside the output
// (gone with the process however it ends), read back block by block into the dataset writer.
class RowSpool {
 public:
  RowSpool(const std::string& near, std::size_t row_bytes) : row_bytes_(row_bytes) {
    const std::string path = near + ".rows-" + std::to_string(getpid());
    fd_ = UniqueFd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    COHORT_CHECK(fd_.get() >= 0, IoError, path, ": cannot create: ", std::strerror(errno));
    ::unlink(path.c_str());
  }
  void append(const std::vector<std::uint8_t>& row, std::int64_t label) {
    const auto* p = row.data();
    for (std::size_t left = row.size(); left > 0;) {
      const ssize_t n = ::write(fd_.get(), p, left);
      COHORT_CHECK(n > 0 || errno == EINTR, IoError,
                   "spool beside the output: ", std::strerror(errno));
      if (n > 0) left -= static_cast<std::size_t>(n), p += n;
    }
    labels_.push_back(label);
  }
  std::int64_t rows() const { return static_cast<std::int64_t>(labels_.size()); }
  void write_to(DatasetWriter& writer) const {
    const std::int64_t block = std::max<std::int64_t>(1, (8 << 20) / row_bytes_);
    std::vector<std::uint8_t> buffer;
    for (std::int64_t first = 0; first < rows(); first += block) {
      const std::int64_t count = std::min(block, rows() - first);
      buffer.resize(static_cast<std::size_t>(count) * row_bytes_);
      const off_t offset = static_cast<off_t>(first) * static_cast<off_t>(row_bytes_);
      const ssize_t n = ::pread(fd_.get(), buffer.data(), buffer.size(), offset);
      COHORT_CHECK(n == static_cast<ssize_t>(buffer.size()), IoError,
                   "spool beside the output: short read");
      writer.write_samples(first, count, buffer.data(), &labels_[static_cast<std::size_t>(first)]);
    }
  }

 private:
  UniqueFd fd_;
  std::size_t row_bytes_;
  std::vector<std::int64_t> labels_;
};

// The decoded image as one sample: channels converted, cropped and resized, planar (C, H, W).
std::vector<std::uint8_t> sample_of(Image decoded, const ImageImportOptions& o) {
  const Image image = convert_channels(std::move(decoded), o.channels);
  Box box{0, 0, static_cast<double>(image.width), static_cast<double>(image.height)};
  if (o.crop == "center") {
    const double aspect = static_cast<double>(o.width) / static_cast<double>(o.height);
    if (image.width > aspect * image.height) {
      const double w = aspect * image.height;
      box.x0 = (image.width - w) / 2, box.x1 = box.x0 + w;
    } else {
      const double h = image.width / aspect;
      box.y0 = (image.height - h) / 2, box.y1 = box.y0 + h;
    }
  }
  const Image sized =
      resize_bilinear(image, static_cast<int>(o.height), static_cast<int>(o.width), box);
  std::vector<std::uint8_t> planar(sized.pixels.size());
  const std::size_t plane = static_cast<std::size_t>(sized.height) * sized.width;
  for (std::size_t i = 0; i < plane; ++i) {
    for (int c = 0; c < sized.channels; ++c)
      planar[c * plane + i] = sized.pixels[i * sized.channels + c];
  }
  return planar;
}

void check_options(const ImageImportOptions& o) {
  COHORT_CHECK(o.height >= 1 && o.height <= 65536 && o.width >= 1 && o.width <= 65536, UsageError,
               "images: size ", o.height, ",", o.width, " is not in 1..65536");
  COHORT_CHECK(o.channels == 1 || o.channels == 3, UsageError, "images: channels ", o.channels,
               " is not 1 or 3");
  COHORT_CHECK(o.channels * o.height * o.width <= kMaxSampleBytes, UsageError, "images: a ",
               o.channels, "x", o.height, "x", o.width, " sample is larger than ", kMaxSampleBytes,
               " bytes");
  COHORT_CHECK(o.max_pixels >= 1, UsageError, "images: max pixels ", o.max_pixels,
               " is not positive");
  COHORT_CHECK(o.crop == "none" || o.crop == "center", UsageError, "images: crop '", o.crop,
               "' is not none or center");
  COHORT_CHECK(o.val_fraction >= 0 && o.val_fraction < 1, UsageError, "images: val fraction ",
               o.val_fraction, " is not in [0, 1)");
  COHORT_CHECK(o.val_fraction == 0 || !o.val_out.empty(), UsageError,
               "images: a validation fraction needs its output");
  COHORT_CHECK(o.world >= 1 && o.rank >= 0 && o.rank < o.world, UsageError, "images: rank ", o.rank,
               " outside world ", o.world);
}

bool in_validation(const std::string& relative, double fraction) {
  const std::uint64_t hash = XXH3_64bits(relative.data(), relative.size());
  return static_cast<double>(hash >> 11) * 0x1.0p-53 < fraction;
}

std::string write_output(const std::string& out, const RowSpool& spool, const ImageImportOptions& o,
                         const std::vector<std::string>& classes, const char* split) {
  if (spool.rows() == 0) return "";
  const std::string path = image_shard_path(out, o.rank, o.world);
  if (o.world > 1) io::make_directories(out);
  WriterSpec spec;
  spec.num_samples = spool.rows();
  spec.sample_shape = {o.channels, o.height, o.width};
  spec.input_dtype = DType::kUInt8;
  spec.classes = static_cast<std::int64_t>(classes.size());
  spec.split = split;
  spec.source = o.dir;
  spec.extra = {{"class_names", nlohmann::json(classes).dump()},
                {"image_resize", "bilinear (Pillow's), crop " + o.crop}};
  spec.chunk_bytes = o.chunk_bytes;
  DatasetWriter writer(path, spec);
  spool.write_to(writer);
  writer.commit();
  return path;
}

}  // namespace

std::string image_shard_path(const std::string& out, int rank, int world) {
  if (world == 1) return out;
  char name[32];
  std::snprintf(name, sizeof name, "/part-%05d.h5", rank);
  return out + name;
}

ImageImportResult import_images(const std::string& out, const ImageImportOptions& o) {
  check_options(o);
  // On N ranks each output is a directory of N parts (image_shard_path).
  const auto kind = o.world > 1 ? io::OutputPlan::Kind::kDirectory : io::OutputPlan::Kind::kFile;
  io::OutputPlan plan;
  plan.read(o.dir, "--dir").write(out, "--out", kind);
  if (o.val_fraction > 0) plan.write(o.val_out, "--val-out", kind);
  plan.check();
  // Every image allocates and frees buffers of its size: kept warm instead of faulted in anew.
  comm::tune_allocator();
  const auto start = std::chrono::steady_clock::now();
  ImageImportResult result;
  const auto images = list_images(o.dir, result.classes);
  const auto n = static_cast<std::int64_t>(images.size());
  const std::int64_t first = n * o.rank / o.world, last = n * (o.rank + 1) / o.world;
  result.listed = last - first;
  const std::size_t row_bytes = static_cast<std::size_t>(o.channels * o.height * o.width);
  const std::string near = image_shard_path(out, o.rank, o.world);
  if (o.world > 1) io::make_directories(out);
  RowSpool train(near, row_bytes);
  std::optional<RowSpool> val;
  if (o.val_fraction > 0) val.emplace(near + "-val", row_bytes);
  for (std::int64_t i = first; i < last; ++i) {
    const auto& image = images[static_cast<std::size_t>(i)];
    std::vector<std::uint8_t> sample;
    try {
      sample = sample_of(decode_image(image.path, o.max_pixels), o);
    } catch (const IoError& error) {
      if (o.strict) throw;
      if (result.first_skipped.size() < kSkippedShown) result.first_skipped.push_back(error.what());
      ++result.skipped;
      continue;
    }
    (val && in_validation(image.relative, o.val_fraction) ? *val : train)
        .append(sample, image.label);
  }
  result.train = train.rows();
  result.val = val ? val->rows() : 0;
  COHORT_CHECK(o.world > 1 || result.train + result.val > 0, IoError, o.dir, ": no image decoded (",
               result.skipped, " skipped)");
  result.out = write_output(out, train, o, result.classes, "train");
  if (val) result.val_out = write_output(o.val_out, *val, o, result.classes, "val");
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

nlohmann::json to_json(const ImageImportResult& r, const ImageImportOptions& o) {
  return {{"rank", o.rank},
          {"world", o.world},
          {"classes", r.classes},
          {"listed", r.listed},
          {"train", r.train},
          {"val", r.val},
          {"skipped", r.skipped},
          {"first_skipped", r.first_skipped},
          {"out", r.out},
          {"val_out", r.val_out},
          {"seconds", r.seconds},
          {"images_per_second", r.seconds > 0 ? static_cast<double>(r.listed) / r.seconds : 0.0}};
}

}  // namespace cohort::data
