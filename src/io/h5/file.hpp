// Small typed helpers over the HDF5 C API, shaped for the dataset format: open and create files,
// query datasets, read and write attributes, and read rows by coalesced runs. Each takes `where`,
// a "file: dataset" phrase for error messages, and holds the HDF5 lock while it calls HDF5.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cohort/io/dtype.hpp"
#include "io/h5/hid.hpp"

namespace cohort::io::h5 {

// A run of consecutive rows [first, first + count) along a dataset's first dimension.
struct Run {
  std::int64_t first = 0;
  std::int64_t count = 0;
};

Hid open_file(const std::string& path, hid_t fapl = H5P_DEFAULT);
// Creates `path` only where nothing is (H5F_ACC_EXCL: O_CREAT | O_EXCL, which no link passes):
// a writer's temporary (io::TemporaryFile). IoError when something is there, left alone.
Hid create_new_file(const std::string& path);
bool has_dataset(hid_t file, const std::string& name);
Hid open_dataset(hid_t file, const std::string& name, const std::string& where);
// Groups: whether `name` is a group (a hard link to one); the names of its members in name
// order (at most max_members: IoError beyond, naming `where`); create one.
bool has_group(hid_t file, const std::string& name);
std::vector<std::string> group_members(hid_t file, const std::string& name, std::size_t max_members,
                                       const std::string& where);
void create_group(hid_t file, const std::string& name, const std::string& where);
Hid open_group(hid_t file, const std::string& name, const std::string& where);

std::vector<std::int64_t> dims(hid_t dataset, const std::string& where);
// Checks that the file really holds the dataset's extent of `element_bytes` elements: the product
// fits 64 bits, contiguous storage is allocated in full and every chunk of a chunked dataset is
// written (HDF5 would read unwritten ones as fill values, so a kilobyte file could claim 2^28
// samples and make a reader allocate for all of them). IoError naming `where` otherwise.
void check_backed(hid_t dataset, std::size_t element_bytes, const std::string& where);
std::vector<std::int64_t> chunk_dims(hid_t dataset, const std::string& where);
// The stored element type mapped onto DType; throws IoError for anything else.
DType stored_dtype(hid_t dataset, const std::string& where);
// An in-memory type for DType (float16: IEEE half as h5py and numpy write it).
Hid memory_type(DType dtype);

// Creates a chunked dataset [rows, inner...] with chunks of about chunk_bytes; chunk_bytes = 0:
// contiguous (one extent, written and read in one piece; the size is fixed at creation).
Hid create_dataset(hid_t file, const std::string& name, DType dtype, std::int64_t rows,
                   const std::vector<std::int64_t>& inner, std::size_t chunk_bytes,
                   const std::string& where);

// A contiguous dataset [rows >= 1, inner...] whose file space is allocated at creation and never
// filled, so that other processes can write its rows with pwrite(2) at data_offset() (an
// output's ranks, each its own rows) while no process has the file open with HDF5.
Hid create_preallocated_dataset(hid_t file, const std::string& name, DType dtype, std::int64_t rows,
                                const std::vector<std::int64_t>& inner, const std::string& where);
// Where a contiguous, allocated dataset's bytes begin in its file.
std::int64_t data_offset(hid_t dataset, const std::string& where);

// Reads the runs (sorted, disjoint) into out, back to back in row order. combined: one H5Dread
// of their union (one OR'ed hyperslab selection), which collective MPI-IO needs, and which takes
// part with an empty selection when there are no runs. Otherwise one H5Dread per run: HDF5 1.10
// merges OR'ed hyperslabs in time that grows with their number, which a shuffled batch of
// hundreds of runs pays dearly, while a single-hyperslab read costs a few microseconds.
void read_runs(hid_t dataset, const std::vector<Run>& runs, DType dtype, void* out, hid_t dxpl,
               bool combined, const std::string& where);
void write_rows(hid_t dataset, std::int64_t first, std::int64_t count, DType dtype,
                const void* data, const std::string& where);

std::optional<std::string> read_string_attribute(hid_t object, const std::string& name,
                                                 const std::string& where);
std::optional<std::vector<double>> read_number_attribute(hid_t object, const std::string& name,
                                                         const std::string& where);
void write_attribute(hid_t object, const std::string& name, const std::string& value,
                     const std::string& where);
void write_attribute(hid_t object, const std::string& name, const std::vector<double>& values,
                     const std::string& where);
void write_attribute(hid_t object, const std::string& name, std::int64_t value,
                     const std::string& where);

// Runs of consecutive values in a sorted index list.
std::vector<Run> coalesce(const std::vector<std::int64_t>& sorted_rows);

}  // namespace cohort::io::h5
