// `cohort data import images`: a folder of JPEG and PNG images sorted into class folders
// (torchvision's ImageFolder layout) to a Cohort dataset of uint8 [channels, height, width]
// samples and int64 class targets. Decoding is libjpeg-turbo's and libpng's, resizing Pillow's
// bilinear (data/tools/image_codec.hpp), so the pixels equal Pillow's.
//
// Protocol: every process lists the same folder in the same order (classes: the sorted
// subfolder names; images: sorted by folder, then name, as ImageFolder walks them); with
// world > 1 each rank decodes its contiguous part and writes its own shard of the output
// directory, so the shards, read in order, hold what one process writes to one file. A file that
// does not decode is skipped and counted (or, strict, stops the import naming it); an image
// lands in the validation output when a hash of its path within the folder falls below
// val_fraction, so the split does not depend on the ranks and stays put as the folder grows.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "cohort/data/dataset.hpp"

namespace cohort::data {

struct ImageImportOptions {
  std::string dir;
  std::int64_t height = 0, width = 0;
  std::string crop = "none";  // none: the whole image; center: its centred region of the aspect
  int channels = 3;           // 3: RGB (grey images replicated); 1: grey (Pillow's "L" of colour)
  double val_fraction = 0;    // with val_out
  std::string val_out;
  bool strict = false;
  std::int64_t max_pixels = std::int64_t{1}
                            << 26;  // a larger image is refused (decompression bomb)
  int rank = 0, world = 1;
  std::size_t chunk_bytes = kDefaultChunkBytes;
};

struct ImageImportResult {
  std::vector<std::string> classes;
  std::int64_t listed = 0;  // images of this rank's part
  std::int64_t train = 0, val = 0, skipped = 0;
  std::vector<std::string> first_skipped;  // "path: reason", the first few
  std::string out, val_out;                // the files this rank wrote ("" for none)
  double seconds = 0;
};

ImageImportResult import_images(const std::string& out, const ImageImportOptions& options);
// `cohort data import images --json`: this rank's result, rank, world and images_per_second.
nlohmann::json to_json(const ImageImportResult& result, const ImageImportOptions& options);

// The output of rank `rank` of `world`: `out` itself for one process, else its shard in `out`/.
std::string image_shard_path(const std::string& out, int rank, int world);

}  // namespace cohort::data
