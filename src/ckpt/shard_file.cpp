#include "cohort/ckpt/shard_file.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <thread>
#include <utility>

#include "ckpt/files.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/dtype.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/input.hpp"
#include "cohort/io/unique_fd.hpp"
#include "io/h5/file.hpp"
#include "io/h5/h5_check.hpp"
#include "io/h5/row_locator.hpp"

namespace cohort::ckpt {
namespace {

namespace h5 = io::h5;
constexpr const char* kShardFormat = "cohort-checkpoint-shard";
constexpr std::int64_t kShardVersion = 1;

// The ckpt module's fault point (tests/train/resume.sh; docs/testing-hostile-input.md lists them
// all): with COHORT_TEST_STALL_SHARD_WRITE=<step>, the save of that step stops after the first
// slice of each shard, its file open and flushed half-written, leaves <shard>.stalled beside it
// and sleeps, so that a test can SIGKILL the job in the middle of a shard write every time rather
// than by luck. Inert unless the variable is set.
void stall_if_asked(hid_t file, const std::string& path, std::int64_t step) {
  const auto hook = env::Environment::from_process().get("COHORT_TEST_STALL_SHARD_WRITE");
  if (!hook || std::to_string(step) != *hook) return;
  {
    auto lock = h5::h5_lock();
    COHORT_H5_CHECK(H5Fflush(file, H5F_SCOPE_LOCAL), path);
  }
  write_file_synced(path + ".stalled", "stalled\n");
  std::this_thread::sleep_for(std::chrono::minutes(10));
}

constexpr std::int64_t kReadPieceBytes = 1 << 20;  // stays in L2 to be hashed

}  // namespace

std::int64_t dtype_bytes(const std::string& dtype) {
  return static_cast<std::int64_t>(io::dtype_size(storage_of(dtype)));
}

WrittenShard write_shard(const std::string& path, const ShardHeader& header,
                         const std::vector<ShardSlice>& slices, const std::string& rank_state) {
  WrittenShard written;
  std::vector<DataExtent> data;
  {
    h5::Hid file = h5::create_new_file(path);  // never through a file or link already there
    h5::write_attribute(file.get(), "format", kShardFormat, path);
    h5::write_attribute(file.get(), "format_version", kShardVersion, path);
    h5::write_attribute(file.get(), "rank", std::int64_t{header.rank}, path);
    h5::write_attribute(file.get(), "world_size", std::int64_t{header.world_size}, path);
    h5::write_attribute(file.get(), "step", header.step, path);
    {
      auto lock = h5::h5_lock();
      h5::Hid group(COHORT_H5_CHECK(
          H5Gcreate2(file.get(), "slices", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), path));
    }
    for (const auto& s : slices) {
      COHORT_CHECK(s.name.find('/') == std::string::npos && !s.name.empty(), IoError, path,
                   ": tensor name '", s.name, "' is empty or contains '/'");
      const std::string where = path + ": slice " + s.name;
      const io::DType type = storage_of(s.dtype);
      const std::size_t bytes = static_cast<std::size_t>(s.count) * io::dtype_size(type);
      written.checksums.push_back(io::bytes_checksum(s.data, bytes));
      h5::Hid set = h5::create_dataset(file.get(), "slices/" + s.name, type, s.count, {}, 0, where);
      h5::write_rows(set.get(), 0, s.count, type, s.data, where);
      written.addresses.push_back(h5::data_offset(set.get(), where));  // contiguous, allocated
      data.push_back({written.addresses.back(), static_cast<std::int64_t>(bytes)});
      h5::write_attribute(set.get(), "offset", s.offset, where);
      h5::write_attribute(set.get(), "dtype", s.dtype, where);
      h5::write_attribute(set.get(), "global_shape", shape_text(s.global_shape), where);
      if (&s == &slices.front()) stall_if_asked(file.get(), path, header.step);
    }
    const auto state_bytes = static_cast<std::int64_t>(rank_state.size());
    h5::Hid state = h5::create_dataset(file.get(), "rank_state", io::DType::kUInt8, state_bytes, {},
                                       1 << 20, path + ": rank_state");
    h5::write_rows(state.get(), 0, state_bytes, io::DType::kUInt8, rank_state.data(),
                   path + ": rank_state");
  }  // closed here, before the fsync: HDF5 writes its last metadata at the close
  fsync_file(path);
  written.metadata_checksum = metadata_checksum(path, std::move(data));
  return written;
}

std::string metadata_checksum(const std::string& path, std::vector<DataExtent> data) {
  const auto file = io::InputFile::open(path, std::numeric_limits<std::int64_t>::max());
  std::sort(data.begin(), data.end(),
            [](const DataExtent& a, const DataExtent& b) { return a.address < b.address; });
  io::StreamingChecksum sum;
  std::vector<char> piece;
  std::int64_t at = 0;
  const auto hash_until = [&](std::int64_t end) {
    for (; at < end; at += static_cast<std::int64_t>(piece.size())) {
      piece.resize(static_cast<std::size_t>(std::min(end - at, kReadPieceBytes)));
      io::read_at(file.fd(), at, piece.data(), piece.size(), path);
      sum.add(piece.data(), piece.size());
    }
  };
  for (const auto& extent : data) {
    COHORT_CHECK(
        extent.address >= at && extent.bytes >= 0 && extent.bytes <= file.size() - extent.address,
        IoError, path, ": slice bytes at ", extent.address, " (", extent.bytes,
        ") overlap another slice's or reach past the file's ", file.size(), " bytes");
    hash_until(extent.address);
    at += extent.bytes;
  }
  hash_until(file.size());
  return sum.result();
}

// What a read needs of one slice's dataset, found once: a load asks for a slice's offset and then
// reads it (and a reshard may read it in several ranges), each a handful of HDF5 queries.
struct SliceFacts {
  h5::Hid set;
  std::optional<std::string> dtype;  // attribute "dtype"
  std::vector<std::int64_t> extent;
  bool located = false;                   // the locator looked for (after the dtype's check)
  std::optional<h5::RowLocator> locator;  // stored as written: read with pread(2)
};

struct ShardReader::Impl {
  std::string path;
  h5::Hid file;
  UniqueFd fd;  // the same file, for pread(2) of slices
  ShardHeader header;
  std::map<std::string, SliceFacts> slices;

  SliceFacts& slice(const std::string& name, const std::string& where) {
    auto it = slices.find(name);
    if (it != slices.end()) return it->second;
    SliceFacts facts;
    facts.set = h5::open_dataset(file.get(), "slices/" + name, where);
    facts.dtype = h5::read_string_attribute(facts.set.get(), "dtype", where);
    facts.extent = h5::dims(facts.set.get(), where);
    return slices.emplace(name, std::move(facts)).first->second;
  }
};

ShardReader::ShardReader(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->file = h5::open_file(path);
  impl_->fd = UniqueFd::open_read_only(path);
  const auto format = h5::read_string_attribute(impl_->file.get(), "format", path);
  COHORT_CHECK(format && *format == kShardFormat, IoError, path,
               ": not a Cohort checkpoint shard (attribute 'format')");
  const auto number = [&](const char* name) {
    const auto v = h5::read_number_attribute(impl_->file.get(), name, path);
    COHORT_CHECK(v && v->size() == 1, IoError, path, ": missing attribute '", name, "'");
    return static_cast<std::int64_t>(v->front());
  };
  COHORT_CHECK(number("format_version") == kShardVersion, IoError, path,
               ": unsupported shard format_version");
  impl_->header = {static_cast<int>(number("rank")), static_cast<int>(number("world_size")),
                   number("step")};
}

ShardReader::~ShardReader() = default;
ShardReader::ShardReader(ShardReader&&) noexcept = default;
ShardReader& ShardReader::operator=(ShardReader&&) noexcept = default;

const ShardHeader& ShardReader::header() const { return impl_->header; }

void ShardReader::read(const std::string& name, const std::string& dtype, std::int64_t from,
                       std::int64_t count, void* out) const {
  read_checked(name, dtype, from, count, out, nullptr);
}

void ShardReader::read(const std::string& name, const std::string& dtype, std::int64_t from,
                       std::int64_t count, void* out, io::StreamingChecksum& sink) const {
  read_checked(name, dtype, from, count, out, &sink);
}

void ShardReader::read_checked(const std::string& name, const std::string& dtype, std::int64_t from,
                               std::int64_t count, void* out, io::StreamingChecksum* sink) const {
  const std::string where = impl_->path + ": slice " + name;
  SliceFacts& slice = impl_->slice(name, where);
  const auto& stored = slice.dtype;
  COHORT_CHECK(stored && *stored == dtype, IoError, where, ": stored as ",
               stored ? *stored : std::string("?"), ", wanted ", dtype);
  // A slice is one flat dataset: a dataset with inner dimensions would fill `out` with
  // count x (their product) elements, past the end of the caller's buffer.
  const auto& extent = slice.extent;
  COHORT_CHECK(extent.size() == 1 && from >= 0 && count >= 0 && count <= extent[0] &&
                   from <= extent[0] - count,
               IoError, where, ": ", count, " elements from ", from,
               " are outside what it stores (shape ", shape_text(extent), ")");
  const io::DType type = storage_of(dtype);
  // Slices are contiguous datasets of the native type: read with pread(2) (no HDF5 call per
  // piece, and no lock: a loader thread's HDF5 reads go on meanwhile). Anything else (a file
  // rewritten by another tool) reads through HDF5.
  if (!slice.located) {
    slice.locator = h5::RowLocator::build(slice.set.get(), type, where);
    slice.located = true;
  }
  const auto read = [&](std::int64_t first, std::int64_t n, void* at) {
    if (slice.locator) {
      slice.locator->read(impl_->fd.get(), {h5::Run{first, n}}, at, where);
    } else {
      h5::read_runs(slice.set.get(), {h5::Run{first, n}}, type, at, H5P_DEFAULT, false, where);
    }
  };
  if (sink == nullptr) {
    read(from, count, out);
    return;
  }
  // Hashed piece by piece while each piece is still in the cache.
  const auto element = static_cast<std::int64_t>(io::dtype_size(type));
  const std::int64_t piece = std::max<std::int64_t>(1, kReadPieceBytes / element);
  for (std::int64_t done = 0; done < count; done += piece) {
    const std::int64_t n = std::min(piece, count - done);
    void* at = static_cast<unsigned char*>(out) + done * element;
    read(from + done, n, at);
    sink->add(at, static_cast<std::size_t>(n * element));
  }
}

std::int64_t ShardReader::slice_offset(const std::string& name) const {
  const std::string where = impl_->path + ": slice " + name;
  const auto offset =
      h5::read_number_attribute(impl_->slice(name, where).set.get(), "offset", where);
  COHORT_CHECK(offset && offset->size() == 1, IoError, where, ": missing attribute 'offset'");
  return static_cast<std::int64_t>(offset->front());
}

std::string ShardReader::rank_state() const {
  const std::string where = impl_->path + ": rank_state";
  h5::Hid set = h5::open_dataset(impl_->file.get(), "rank_state", where);
  const auto extent = h5::dims(set.get(), where);
  COHORT_CHECK(extent.size() == 1 && extent[0] <= io::file_bytes(impl_->path), IoError, where,
               ": shape ", shape_text(extent), " is not a byte string this file can hold");
  const auto n = extent[0];
  std::string bytes(static_cast<std::size_t>(n), '\0');
  h5::read_runs(set.get(), {h5::Run{0, n}}, io::DType::kUInt8, bytes.data(), H5P_DEFAULT, false,
                where);
  return bytes;
}

}  // namespace cohort::ckpt
