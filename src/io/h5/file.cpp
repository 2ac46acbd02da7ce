#include "io/h5/file.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "cohort/io/input.hpp"
#include "common/checked_math.hpp"
#include "io/h5/h5_check.hpp"

namespace cohort::io::h5 {

Hid open_file(const std::string& path, hid_t fapl) {
  // The one way in says what the path is when it is not a file; HDF5 then opens it by name (its
  // drivers, MPI-IO included, take names), with no FIFO to block on.
  InputFile::open(path, std::numeric_limits<std::int64_t>::max());
  auto lock = h5_lock();
  COHORT_CHECK(H5Fis_hdf5(path.c_str()) > 0, IoError, path,
               ": not an HDF5 file (truncated or corrupt?)", h5_error_text());
  return Hid(COHORT_H5_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), path));
}

Hid create_new_file(const std::string& path) {
  struct stat st {};
  COHORT_CHECK(::lstat(path.c_str(), &st) != 0, IoError, path,
               ": cannot create: something is there already (left alone: remove it if it is a "
               "leftover of an earlier run)");
  auto lock = h5_lock();
  return Hid(
      COHORT_H5_CHECK(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT), path));
}

namespace {

// The type of the link `name` (one component below `parent`), without following it; nullopt
// when there is no such link.
std::optional<H5L_type_t> link_type(hid_t file, const std::string& name) {
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0) {
    h5_error_text();
    return std::nullopt;
  }
  H5L_info_t info{};
  if (H5Lget_info(file, name.c_str(), &info, H5P_DEFAULT) < 0) {
    h5_error_text();
    return std::nullopt;
  }
  return info.type;
}

// Every component of `name` ("/slices/w") is a hard link: a soft or external link could make a
// reader take one file's chunk addresses for another's, or read any file on the machine.
void check_hard_links(hid_t file, const std::string& name, const std::string& where) {
  for (std::size_t end = name.find('/', 1);; end = name.find('/', end + 1)) {
    const std::string prefix = name.substr(0, end);
    if (!prefix.empty() && prefix != "/") {
      const auto type = link_type(file, prefix);
      COHORT_CHECK(!type || *type == H5L_TYPE_HARD, IoError, where, ": '", prefix,
                   "' is a soft or external link, which Cohort does not follow "
                   "(docs/formats/dataset.md)");
    }
    if (end == std::string::npos) break;
  }
}

// Where the data lives: in this file only (contiguous, chunked or compact). External raw-data
// files and virtual datasets would let a dataset read any file the process can.
void check_own_storage(hid_t dataset, const std::string& where) {
  Hid plist(COHORT_H5_CHECK(H5Dget_create_plist(dataset), where));
  const H5D_layout_t layout = H5Pget_layout(plist.get());
  COHORT_CHECK(layout == H5D_CONTIGUOUS || layout == H5D_CHUNKED || layout == H5D_COMPACT, IoError,
               where, ": virtual datasets are not supported (docs/formats/dataset.md)");
  COHORT_CHECK(H5Pget_external_count(plist.get()) == 0, IoError, where,
               ": external raw-data storage is not supported (docs/formats/dataset.md)");
}

}  // namespace

namespace {

// Whether `name` is an object of `kind`; a soft or external link counts as one (the open that
// follows refuses it, naming it).
bool has_object(hid_t file, const std::string& name, H5I_type_t kind) {
  auto lock = h5_lock();
  const auto type = link_type(file, name);
  if (!type) return false;
  if (*type != H5L_TYPE_HARD) return true;
  // Opened and asked its kind, rather than through H5Oget_info_by_name, whose arguments and
  // info struct differ between HDF5 1.10 and 1.12+ (API versions); these two calls do not.
  const Hid object(H5Oopen(file, name.c_str(), H5P_DEFAULT));
  if (object.get() < 0) {
    h5_error_text();
    return false;
  }
  return H5Iget_type(object.get()) == kind;
}

}  // namespace

bool has_dataset(hid_t file, const std::string& name) {
  return has_object(file, name, H5I_DATASET);
}

bool has_group(hid_t file, const std::string& name) { return has_object(file, name, H5I_GROUP); }

std::vector<std::string> group_members(hid_t file, const std::string& name, std::size_t max_members,
                                       const std::string& where) {
  auto lock = h5_lock();
  check_hard_links(file, name, where);
  Hid group(COHORT_H5_CHECK(H5Gopen2(file, name.c_str(), H5P_DEFAULT), where));
  H5G_info_t info{};
  COHORT_H5_CHECK(H5Gget_info(group.get(), &info), where);
  COHORT_CHECK(info.nlinks <= max_members, IoError, where, ": group '", name, "' has ", info.nlinks,
               " members, more than the ", max_members, " allowed");
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t length =
        COHORT_H5_CHECK(H5Lget_name_by_idx(group.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr,
                                           0, H5P_DEFAULT),
                        where);
    COHORT_CHECK(length > 0 && length < 256, IoError, where, ": a member of '", name,
                 "' has a name of ", length, " bytes (1..255 allowed)");
    std::string member(static_cast<std::size_t>(length) + 1, '\0');
    COHORT_H5_CHECK(H5Lget_name_by_idx(group.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i,
                                       member.data(), member.size(), H5P_DEFAULT),
                    where);
    member.resize(static_cast<std::size_t>(length));
    names.push_back(member);
  }
  return names;
}

Hid open_group(hid_t file, const std::string& name, const std::string& where) {
  auto lock = h5_lock();
  check_hard_links(file, name, where);
  return Hid(COHORT_H5_CHECK(H5Gopen2(file, name.c_str(), H5P_DEFAULT), where));
}

void create_group(hid_t file, const std::string& name, const std::string& where) {
  auto lock = h5_lock();
  Hid group(COHORT_H5_CHECK(H5Gcreate2(file, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                            where));
}

Hid open_dataset(hid_t file, const std::string& name, const std::string& where) {
  auto lock = h5_lock();
  check_hard_links(file, name, where);
  COHORT_CHECK(has_dataset(file, name), IoError, where, ": no dataset '", name, "'");
  Hid set(COHORT_H5_CHECK(H5Dopen2(file, name.c_str(), H5P_DEFAULT), where));
  check_own_storage(set.get(), where);
  return set;
}

std::vector<std::int64_t> dims(hid_t dataset, const std::string& where) {
  auto lock = h5_lock();
  Hid space(COHORT_H5_CHECK(H5Dget_space(dataset), where));
  const int rank = COHORT_H5_CHECK(H5Sget_simple_extent_ndims(space.get()), where);
  std::vector<hsize_t> extent(static_cast<std::size_t>(rank));
  COHORT_H5_CHECK(H5Sget_simple_extent_dims(space.get(), extent.data(), nullptr), where);
  return {extent.begin(), extent.end()};
}

void check_backed(hid_t dataset, std::size_t element_bytes, const std::string& where) {
  const auto extent = dims(dataset, where);
  const auto numel = checked::product(extent);
  const auto bytes = numel ? checked::mul(*numel, static_cast<std::int64_t>(element_bytes)) : numel;
  COHORT_CHECK(bytes.has_value(), IoError, where, ": extent overflows 64 bits");
  if (*bytes == 0) return;
  const auto chunk = chunk_dims(dataset, where);
  auto lock = h5_lock();
  if (chunk.empty()) {  // contiguous or compact: one extent, allocated as a whole
    const auto stored = H5Dget_storage_size(dataset);
    COHORT_CHECK(static_cast<std::int64_t>(stored) >= *bytes, IoError, where, ": holds ", stored,
                 " of its ", *bytes, " bytes (never written in full)");
    return;
  }
  std::int64_t expected = 1;
  for (std::size_t d = 0; d < extent.size() && d < chunk.size(); ++d) {
    const auto per = std::max<std::int64_t>(chunk[d], 1);
    expected *= (extent[d] + per - 1) / per;  // <= numel, so no overflow
  }
  hsize_t written = 0;
  Hid space(COHORT_H5_CHECK(H5Dget_space(dataset), where));
  COHORT_H5_CHECK(H5Dget_num_chunks(dataset, space.get(), &written), where);
  COHORT_CHECK(static_cast<std::int64_t>(written) == expected, IoError, where, ": ", written,
               " of its ", expected, " chunks are written (unwritten rows are not data)");
}

std::vector<std::int64_t> chunk_dims(hid_t dataset, const std::string& where) {
  auto lock = h5_lock();
  Hid plist(COHORT_H5_CHECK(H5Dget_create_plist(dataset), where));
  if (H5Pget_layout(plist.get()) != H5D_CHUNKED) return {};
  std::vector<hsize_t> chunk(H5S_MAX_RANK);
  const int rank = COHORT_H5_CHECK(H5Pget_chunk(plist.get(), H5S_MAX_RANK, chunk.data()), where);
  return {chunk.begin(), chunk.begin() + rank};
}

DType stored_dtype(hid_t dataset, const std::string& where) {
  auto lock = h5_lock();
  Hid type(COHORT_H5_CHECK(H5Dget_type(dataset), where));
  const H5T_class_t type_class = H5Tget_class(type.get());
  const std::size_t size = H5Tget_size(type.get());
  if (type_class == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type.get()) == H5T_SGN_2;
    if (!is_signed && size == 1) return DType::kUInt8;
    if (!is_signed && size == 2) return DType::kUInt16;
    if (is_signed && size == 4) return DType::kInt32;
    if (is_signed && size == 8) return DType::kInt64;
    COHORT_THROW(IoError, where, ": unsupported integer type (", is_signed ? "int" : "uint",
                 size * 8, "); use uint8, uint16, int32 or int64");
  }
  if (type_class == H5T_FLOAT) {
    if (size == 2) return DType::kFloat16;
    if (size == 4) return DType::kFloat32;
    if (size == 8) return DType::kFloat64;
  }
  COHORT_THROW(IoError, where, ": unsupported element type (class ", static_cast<int>(type_class),
               ", ", size, " bytes); use a numeric type");
}

Hid memory_type(DType dtype) {
  auto lock = h5_lock();
  const char* where = "HDF5 memory type";
  switch (dtype) {
    case DType::kUInt8:
      return Hid(COHORT_H5_CHECK(H5Tcopy(H5T_NATIVE_UINT8), where));
    case DType::kUInt16:
      return Hid(COHORT_H5_CHECK(H5Tcopy(H5T_NATIVE_UINT16), where));
    case DType::kInt32:
      return Hid(COHORT_H5_CHECK(H5Tcopy(H5T_NATIVE_INT32), where));
    case DType::kInt64:
      return Hid(COHORT_H5_CHECK(H5Tcopy(H5T_NATIVE_INT64), where));
    case DType::kFloat32:
      return Hid(COHORT_H5_CHECK(H5Tcopy(H5T_NATIVE_FLOAT), where));
    case DType::kFloat64:
      return Hid(COHORT_H5_CHECK(H5Tcopy(H5T_NATIVE_DOUBLE), where));
    case DType::kFloat16: {
      // IEEE 754 binary16, little endian: the layout h5py gives numpy's float16.
      Hid half(COHORT_H5_CHECK(H5Tcopy(H5T_IEEE_F32LE), where));
      COHORT_H5_CHECK(H5Tset_fields(half.get(), 15, 10, 5, 0, 10), where);
      COHORT_H5_CHECK(H5Tset_size(half.get(), 2), where);
      COHORT_H5_CHECK(H5Tset_ebias(half.get(), 15), where);
      return half;
    }
  }
  COHORT_THROW(IoError, where, ": unknown dtype");
}

Hid create_dataset(hid_t file, const std::string& name, DType dtype, std::int64_t rows,
                   const std::vector<std::int64_t>& inner, std::size_t chunk_bytes,
                   const std::string& where) {
  std::vector<hsize_t> extent{static_cast<hsize_t>(rows)};
  std::size_t row_bytes = dtype_size(dtype);
  for (auto d : inner) {
    extent.push_back(static_cast<hsize_t>(d));
    row_bytes *= static_cast<std::size_t>(d);
  }
  // Whole rows per chunk, as many as fit the target (at least one, at most all).
  std::vector<hsize_t> chunk = extent;
  const auto chunk_rows =
      std::max<std::size_t>(1, chunk_bytes / std::max<std::size_t>(1, row_bytes));
  chunk[0] = std::max<hsize_t>(1, std::min<hsize_t>(extent[0], chunk_rows));
  auto lock = h5_lock();
  Hid space(COHORT_H5_CHECK(
      H5Screate_simple(static_cast<int>(extent.size()), extent.data(), nullptr), where));
  Hid plist(COHORT_H5_CHECK(H5Pcreate(H5P_DATASET_CREATE), where));
  if (rows > 0 && chunk_bytes > 0) {
    COHORT_H5_CHECK(H5Pset_chunk(plist.get(), static_cast<int>(chunk.size()), chunk.data()), where);
  }
  Hid type = memory_type(dtype);
  return Hid(COHORT_H5_CHECK(H5Dcreate2(file, name.c_str(), type.get(), space.get(), H5P_DEFAULT,
                                        plist.get(), H5P_DEFAULT),
                             where));
}

Hid create_preallocated_dataset(hid_t file, const std::string& name, DType dtype, std::int64_t rows,
                                const std::vector<std::int64_t>& inner, const std::string& where) {
  COHORT_CHECK(rows >= 1, IoError, where, ": a preallocated dataset needs rows");
  std::vector<hsize_t> extent{static_cast<hsize_t>(rows)};
  for (auto d : inner) extent.push_back(static_cast<hsize_t>(d));
  auto lock = h5_lock();
  Hid space(COHORT_H5_CHECK(
      H5Screate_simple(static_cast<int>(extent.size()), extent.data(), nullptr), where));
  Hid plist(COHORT_H5_CHECK(H5Pcreate(H5P_DATASET_CREATE), where));
  COHORT_H5_CHECK(H5Pset_layout(plist.get(), H5D_CONTIGUOUS), where);
  COHORT_H5_CHECK(H5Pset_alloc_time(plist.get(), H5D_ALLOC_TIME_EARLY), where);
  COHORT_H5_CHECK(H5Pset_fill_time(plist.get(), H5D_FILL_TIME_NEVER), where);
  Hid type = memory_type(dtype);
  return Hid(COHORT_H5_CHECK(H5Dcreate2(file, name.c_str(), type.get(), space.get(), H5P_DEFAULT,
                                        plist.get(), H5P_DEFAULT),
                             where));
}

std::int64_t data_offset(hid_t dataset, const std::string& where) {
  auto lock = h5_lock();
  const haddr_t address = H5Dget_offset(dataset);
  COHORT_CHECK(address != HADDR_UNDEF, IoError, where, ": the dataset has no allocated space");
  return static_cast<std::int64_t>(address);
}

namespace {

// Selects rows [first, first+count) x everything in the remaining dimensions.
void select_rows(hid_t space, const std::vector<Run>& runs, const std::vector<hsize_t>& extent,
                 const std::string& where) {
  if (runs.empty()) {
    COHORT_H5_CHECK(H5Sselect_none(space), where);
    return;
  }
  std::vector<hsize_t> start(extent.size(), 0), count = extent;
  bool first = true;
  for (const auto& run : runs) {
    start[0] = static_cast<hsize_t>(run.first);
    count[0] = static_cast<hsize_t>(run.count);
    COHORT_H5_CHECK(H5Sselect_hyperslab(space, first ? H5S_SELECT_SET : H5S_SELECT_OR, start.data(),
                                        nullptr, count.data(), nullptr),
                    where);
    first = false;
  }
}

}  // namespace

void read_runs(hid_t dataset, const std::vector<Run>& runs, DType dtype, void* out, hid_t dxpl,
               bool combined, const std::string& where) {
  auto lock = h5_lock();
  Hid file_space(COHORT_H5_CHECK(H5Dget_space(dataset), where));
  const int rank = COHORT_H5_CHECK(H5Sget_simple_extent_ndims(file_space.get()), where);
  std::vector<hsize_t> extent(static_cast<std::size_t>(rank));
  COHORT_H5_CHECK(H5Sget_simple_extent_dims(file_space.get(), extent.data(), nullptr), where);
  hsize_t rows = 0;
  for (const auto& run : runs) {
    COHORT_CHECK(run.first >= 0 && run.count >= 0 && static_cast<hsize_t>(run.count) <= extent[0] &&
                     static_cast<hsize_t>(run.first) <= extent[0] - static_cast<hsize_t>(run.count),
                 IoError, where, ": ", run.count, " rows from row ", run.first,
                 " are outside the dataset's ", extent[0], " rows");
    rows += static_cast<hsize_t>(run.count);
  }
  Hid type = memory_type(dtype);
  std::size_t row_bytes = dtype_size(dtype);
  for (std::size_t d = 1; d < extent.size(); ++d) row_bytes *= extent[d];
  if (!combined) {
    auto* at = static_cast<unsigned char*>(out);
    for (const auto& run : runs) {
      select_rows(file_space.get(), {run}, extent, where);
      std::vector<hsize_t> mem_extent = extent;
      mem_extent[0] = static_cast<hsize_t>(run.count);
      Hid mem_space(COHORT_H5_CHECK(H5Screate_simple(rank, mem_extent.data(), nullptr), where));
      COHORT_H5_CHECK(H5Dread(dataset, type.get(), mem_space.get(), file_space.get(), dxpl, at),
                      where);
      at += static_cast<std::size_t>(run.count) * row_bytes;
    }
    return;
  }
  select_rows(file_space.get(), runs, extent, where);
  std::vector<hsize_t> mem_extent = extent;
  mem_extent[0] = std::max<hsize_t>(rows, 1);
  Hid mem_space(COHORT_H5_CHECK(H5Screate_simple(rank, mem_extent.data(), nullptr), where));
  if (rows == 0) COHORT_H5_CHECK(H5Sselect_none(mem_space.get()), where);
  COHORT_H5_CHECK(H5Dread(dataset, type.get(), mem_space.get(), file_space.get(), dxpl, out),
                  where);
}

void write_rows(hid_t dataset, std::int64_t first, std::int64_t count, DType dtype,
                const void* data, const std::string& where) {
  if (count == 0) return;
  auto lock = h5_lock();
  Hid file_space(COHORT_H5_CHECK(H5Dget_space(dataset), where));
  const int rank = COHORT_H5_CHECK(H5Sget_simple_extent_ndims(file_space.get()), where);
  std::vector<hsize_t> extent(static_cast<std::size_t>(rank));
  COHORT_H5_CHECK(H5Sget_simple_extent_dims(file_space.get(), extent.data(), nullptr), where);
  select_rows(file_space.get(), {Run{first, count}}, extent, where);
  extent[0] = static_cast<hsize_t>(count);
  Hid mem_space(COHORT_H5_CHECK(H5Screate_simple(rank, extent.data(), nullptr), where));
  Hid type = memory_type(dtype);
  COHORT_H5_CHECK(
      H5Dwrite(dataset, type.get(), mem_space.get(), file_space.get(), H5P_DEFAULT, data), where);
}

std::vector<Run> coalesce(const std::vector<std::int64_t>& sorted_rows) {
  std::vector<Run> runs;
  for (const auto row : sorted_rows) {
    if (!runs.empty() && runs.back().first + runs.back().count == row) {
      ++runs.back().count;
    } else if (runs.empty() || runs.back().first + runs.back().count - 1 != row) {
      runs.push_back(Run{row, 1});  // (a repeated row is read once)
    }
  }
  return runs;
}

}  // namespace cohort::io::h5
