#include "cohort/ckpt/weights.hpp"

#include <ATen/ops/empty.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "ckpt/files.hpp"
#include "cohort/ckpt/inspect.hpp"
#include "cohort/ckpt/reader.hpp"
#include "cohort/ckpt/tensor_parts.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/input.hpp"
#include "io/h5/file.hpp"
#include "io/h5/h5_check.hpp"

namespace cohort::ckpt {
namespace {

namespace fs = std::filesystem;
namespace h5 = io::h5;
constexpr std::size_t kMaxExportTensors = 1 << 20;
// A weights file larger than this is refused before it is read (1 TiB).
constexpr std::int64_t kMaxWeightsFileBytes = std::int64_t{1} << 40;

// A checkpoint directory's newest checkpoint that verifies (a step directory: itself).
std::string newest_valid(const std::string& dir) {
  std::error_code error;
  if (fs::is_regular_file(fs::path(dir) / "manifest.json", error)) return dir;
  COHORT_CHECK(fs::exists(dir, error), IoError, dir, ": no such checkpoint directory",
               kWhereCheckpointsComeFrom);
  std::string problems;
  for (const auto& entry : list_checkpoints(dir)) {
    const auto found =
        entry.readable ? verify_checkpoint(entry.path) : std::vector<std::string>{entry.problem};
    if (found.empty()) return entry.path;
    problems += " " + entry.path + ": " + found.front() + ";";
  }
  COHORT_CHECK(!problems.empty(), IoError, dir, ": holds no checkpoint", kWhereCheckpointsComeFrom);
  COHORT_THROW(IoError, dir, ": no checkpoint that verifies (", problems, " )");
}

NamedWeights read_checkpoint(const std::string& dir) {
  NamedWeights weights;
  weights.source = newest_valid(dir);
  CheckpointReader reader(weights.source);
  const auto split = tensor_split_params(reader.manifest());
  std::set<std::string> joined;  // tensor-parallel parts: the whole tensor, once
  for (const auto& entry : reader.manifest().tensors) {
    if (entry.name.rfind("model.", 0) != 0) continue;
    if (const auto whole = joined_name(entry.name, split)) {
      if (joined.insert(*whole).second) {
        weights.tensors.emplace_back(whole->substr(6), *read_joined(reader, *whole, true));
      }
      continue;
    }
    at::Tensor t = at::empty(entry.shape, at::TensorOptions().dtype(scalar_type_of(entry.dtype)));
    reader.read(entry, t.data_ptr(), /*verify=*/true);
    weights.tensors.emplace_back(entry.name.substr(6), std::move(t));
  }
  return weights;
}

// `cohort ckpt export -o F.h5`: one dataset per tensor, its dtype and shape as attributes.
NamedWeights read_export_h5(const std::string& path) {
  h5::Hid file = h5::open_file(path);
  const auto format = h5::read_string_attribute(file.get(), "format", path);
  COHORT_CHECK(format && *format == "cohort-checkpoint-export", IoError, path,
               ": not a Cohort export (its 'format' attribute is not cohort-checkpoint-export)");
  NamedWeights weights;
  weights.source = path;
  for (const auto& name : h5::group_members(file.get(), "/", kMaxExportTensors, path)) {
    const std::string where = path + ": " + name;
    h5::Hid set = h5::open_dataset(file.get(), name, where);
    const io::DType stored = h5::stored_dtype(set.get(), where);
    h5::check_backed(set.get(), io::dtype_size(stored), where);
    const auto dims = h5::dims(set.get(), where);
    at::Tensor t =
        at::empty(dims, at::TensorOptions().dtype(scalar_type_of(io::to_string(stored))));
    const std::int64_t rows = dims.empty() ? 1 : dims[0];
    if (t.numel() > 0) {
      h5::read_runs(set.get(), {{0, rows}}, stored, t.data_ptr(), H5P_DEFAULT, false, where);
    }
    const auto dtype = h5::read_string_attribute(set.get(), "dtype", where);
    const auto shape = h5::read_string_attribute(set.get(), "shape", where);
    if (shape && *shape == "[]") t = t.reshape({});  // a 0-d tensor, stored as one element
    if (dtype) t = t.to(scalar_type_of(*dtype));     // bfloat16, stored as float32
    weights.tensors.emplace_back(name, std::move(t));
  }
  return weights;
}

// Whether the file begins with a zip record, as torch.save's files and Cohort's .pt exports do.
// Anything else is refused: LibTorch's own unpickler is never given bytes from outside, and a
// zip with bytes in front of it (which a zip reader would find from its end) is not read.
bool starts_with_zip(const io::InputFile& file) {
  char magic[4] = {};
  return file.size() >= 4 && ::pread(file.fd(), magic, 4, 0) == 4 &&
         std::string(magic, 4) == std::string("PK\x03\x04", 4);
}

}  // namespace

NamedWeights read_weights(const std::string& path) {
  std::error_code error;
  if (fs::is_directory(path, error)) return read_checkpoint(path);
  // One open that says what the path is when it is not a file (a FIFO, a dangling link).
  const auto file = io::InputFile::open(path, kMaxWeightsFileBytes);
  const std::string extension = fs::path(path).extension().string();
  if (extension == ".h5" || extension == ".hdf5") return read_export_h5(path);
  COHORT_CHECK(starts_with_zip(file), IoError, path,
               ": neither a torch.save zip file nor a Cohort export (.pt, .h5) nor a checkpoint "
               "directory: it does not begin with a zip record");
  return read_torch_save(path);
}

}  // namespace cohort::ckpt
