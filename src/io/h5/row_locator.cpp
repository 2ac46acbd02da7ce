#include "io/h5/row_locator.hpp"

#include <algorithm>

#include "cohort/io/files.hpp"
#include "io/h5/h5_check.hpp"

namespace cohort::io::h5 {
namespace {

bool same_bytes_as_native(hid_t dataset, DType dtype, const std::string& where) {
  Hid stored(COHORT_H5_CHECK(H5Dget_type(dataset), where));
  Hid native = memory_type(dtype);
  return H5Tequal(stored.get(), native.get()) > 0;
}

}  // namespace

std::optional<RowLocator> RowLocator::build(hid_t dataset, DType dtype, const std::string& where) {
  auto lock = h5_lock();
  const auto extent = dims(dataset, where);
  if (extent.empty() || !same_bytes_as_native(dataset, dtype, where)) return std::nullopt;
  Hid plist(COHORT_H5_CHECK(H5Dget_create_plist(dataset), where));
  if (COHORT_H5_CHECK(H5Pget_nfilters(plist.get()), where) != 0) return std::nullopt;
  RowLocator locator;
  locator.rows_ = extent[0];
  locator.row_bytes_ = dtype_size(dtype);
  for (std::size_t d = 1; d < extent.size(); ++d) {
    locator.row_bytes_ *= static_cast<std::size_t>(extent[d]);
  }
  const H5D_layout_t layout = H5Pget_layout(plist.get());
  if (layout == H5D_CONTIGUOUS) {
    const haddr_t address = H5Dget_offset(dataset);
    if (address == HADDR_UNDEF) {
      h5_error_text();  // unallocated (never written): HDF5 returns fill values
      return std::nullopt;
    }
    locator.addresses_ = {static_cast<std::uint64_t>(address)};
    return locator;
  }
  if (layout != H5D_CHUNKED) return std::nullopt;
  const auto chunk = chunk_dims(dataset, where);
  for (std::size_t d = 1; d < extent.size(); ++d) {
    if (chunk[d] != extent[d]) return std::nullopt;  // chunks cut rows apart
  }
  locator.rows_per_chunk_ = chunk[0];
  const auto chunks = static_cast<hsize_t>((extent[0] + chunk[0] - 1) / chunk[0]);
  hsize_t allocated = 0;
  Hid space(COHORT_H5_CHECK(H5Dget_space(dataset), where));  // (1.10 does not take H5S_ALL)
  COHORT_H5_CHECK(H5Dget_num_chunks(dataset, space.get(), &allocated), where);
  if (allocated != chunks) return std::nullopt;
  locator.addresses_.assign(chunks, 0);
  std::vector<hsize_t> offset(extent.size());
  for (hsize_t i = 0; i < chunks; ++i) {
    unsigned filter_mask = 0;
    haddr_t address = HADDR_UNDEF;
    hsize_t size = 0;
    COHORT_H5_CHECK(
        H5Dget_chunk_info(dataset, space.get(), i, offset.data(), &filter_mask, &address, &size),
        where);
    if (address == HADDR_UNDEF || size != static_cast<hsize_t>(chunk[0]) * locator.row_bytes_) {
      return std::nullopt;
    }
    locator.addresses_[offset[0] / static_cast<hsize_t>(chunk[0])] = address;
  }
  return locator;
}

template <typename Visit>
void RowLocator::for_each_extent(const std::vector<Run>& runs, const std::string& where,
                                 Visit&& visit) const {
  for (const auto& run : runs) {
    COHORT_CHECK(run.first >= 0 && run.first + run.count <= rows_, IoError, where, ": rows [",
                 run.first, ", ", run.first + run.count, ") outside the dataset's ", rows_,
                 " rows");
    std::int64_t row = run.first;
    while (row < run.first + run.count) {
      // The longest piece of the run inside one chunk (the whole run when contiguous).
      std::int64_t count = run.first + run.count - row;
      std::uint64_t address = addresses_[0] + static_cast<std::uint64_t>(row) * row_bytes_;
      if (rows_per_chunk_ > 0) {
        const std::int64_t in_chunk = row % rows_per_chunk_;
        count = std::min(count, rows_per_chunk_ - in_chunk);
        address = addresses_[static_cast<std::size_t>(row / rows_per_chunk_)] +
                  static_cast<std::uint64_t>(in_chunk) * row_bytes_;
      }
      visit(Extent{address, static_cast<std::size_t>(count) * row_bytes_});
      row += count;
    }
  }
}

void RowLocator::read(int fd, const std::vector<Run>& runs, void* out,
                      const std::string& where) const {
  auto* at = static_cast<unsigned char*>(out);
  for_each_extent(runs, where, [&](Extent piece) {
    read_at(fd, static_cast<std::int64_t>(piece.address), at, piece.bytes, where);
    at += piece.bytes;
  });
}

std::vector<Extent> RowLocator::extents(const std::vector<Run>& runs,
                                        const std::string& where) const {
  std::vector<Extent> pieces;
  for_each_extent(runs, where, [&](Extent piece) { pieces.push_back(piece); });
  return pieces;
}

}  // namespace cohort::io::h5
