#include <ATen/Context.h>
#include <ATen/core/Tensor.h>

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "cohort/data/reader.hpp"
#include "cohort/data/writer.hpp"
#include "cohort/error.hpp"
#include "data_fixture.hpp"

using cohort::data::BatchReader;
using cohort::data::ReaderOptions;
using cohort::test::make_rows;

namespace {

std::vector<float> first_values(const cohort::data::Batch& batch) {
  std::vector<float> values;
  const auto numel = batch.inputs.numel() / batch.inputs.size(0);
  for (std::int64_t i = 0; i < batch.inputs.size(0); ++i) {
    values.push_back(batch.inputs.data_ptr<float>()[i * numel]);
  }
  return values;
}

ReaderOptions raw_values() {
  ReaderOptions options;
  options.normalize = false;
  return options;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(data_reader)

BOOST_AUTO_TEST_CASE(batch_comes_back_in_the_order_asked_with_runs_coalesced) {
  cohort::test::ScratchDir dir;
  BatchReader reader(make_rows(dir.file("a.h5"), 0, 100), raw_values());
  // Three runs: 3..5, 10..11, 40 (and a repeat of 4 read once).
  const auto batch = reader.read({40, 4, 11, 3, 10, 5, 4});
  BOOST_TEST(first_values(batch) == (std::vector<float>{40, 4, 11, 3, 10, 5, 4}),
             boost::test_tools::per_element());
  BOOST_TEST(batch.targets.data_ptr<std::int64_t>()[0] == 0);  // 40 % 10
  BOOST_TEST(batch.targets.data_ptr<std::int64_t>()[2] == 1);  // 11 % 10
  BOOST_TEST(reader.stats().runs == 3);
  // Page-locked only where CUDA is present (Debian's LibTorch is CPU-only: never here).
  BOOST_TEST(batch.inputs.is_pinned() == at::globalContext().hasCUDA());
  BOOST_TEST(reader.stats().bytes == 6 * (48 * 4 + 8));  // six distinct rows read once
}

BOOST_AUTO_TEST_CASE(shards_read_as_one_dataset_across_boundaries) {
  cohort::test::ScratchDir dir;
  std::filesystem::create_directories(dir.path / "set");
  make_rows(dir.file("set/s0.h5"), 0, 7);
  make_rows(dir.file("set/s1.h5"), 7, 1);
  make_rows(dir.file("set/s2.h5"), 8, 12);
  BatchReader reader(dir.file("set"), raw_values());
  BOOST_TEST(reader.info().num_samples == 20);
  BOOST_TEST(reader.info().shards.size() == 3u);
  const auto batch = reader.read({19, 6, 7, 8, 0});
  BOOST_TEST(first_values(batch) == (std::vector<float>{19, 6, 7, 8, 0}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(chunk_shape_follows_the_byte_target) {
  cohort::test::ScratchDir dir;
  // 48 floats = 192 bytes a row; a 4 KiB target holds 21 rows.
  const auto info = BatchReader(make_rows(dir.file("c.h5"), 0, 100, {3, 4, 4}, 4096), {}).info();
  BOOST_TEST(info.shards[0].chunk == (std::vector<std::int64_t>{21, 3, 4, 4}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(augmentation_is_a_function_of_seed_epoch_and_sample) {
  cohort::test::ScratchDir dir;
  // Distinct pixel values so that a flip or a shift shows.
  cohort::data::WriterSpec spec;
  spec.num_samples = 16;
  spec.sample_shape = {1, 6, 6};
  std::vector<float> x(16 * 36);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 36 + 1);
  std::vector<std::int64_t> y(16, 0);
  cohort::data::DatasetWriter writer(dir.file("img.h5"), spec);
  writer.write_samples(0, 16, x.data(), y.data());
  writer.commit();
  ReaderOptions options = raw_values();
  options.augment = {2, true};
  options.seed = 5;
  BatchReader a(dir.file("img.h5"), options), b(dir.file("img.h5"), options);
  // Sample 3 gets the same augmentation alone or inside another batch (another rank's view).
  const auto alone = a.read({3}, 1).inputs;
  const auto within = b.read({9, 3, 12}, 1).inputs.select(0, 1);
  BOOST_TEST(alone.select(0, 0).equal(within));
  // Across epochs and samples the augmentation varies (16 samples x 2 epochs: some differ).
  int changed = 0;
  for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
    const auto batch = a.read({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, epoch);
    for (std::int64_t i = 0; i < 16; ++i) {
      changed += batch.inputs.select(0, i).data_ptr<float>()[7] != 8.0f ? 1 : 0;
    }
  }
  BOOST_TEST(changed > 8);
}

// After a writer gave up on `path` (made by make_rows with 5 rows, `size` bytes): the old file is
// whole and alone in its directory.
static void expect_only_the_old_file(const cohort::test::ScratchDir& dir, const std::string& path,
                                     std::uintmax_t size) {
  BOOST_TEST(std::filesystem::file_size(path) == size);
  BOOST_TEST(BatchReader(path, {}).info().num_samples == 5);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) files += entry.exists();
  BOOST_TEST(files == 1);
}

BOOST_AUTO_TEST_CASE(an_uncommitted_writer_leaves_nothing_and_keeps_the_old_file) {
  cohort::test::ScratchDir dir;
  const auto path = make_rows(dir.file("keep.h5"), 0, 5);
  const auto size = std::filesystem::file_size(path);
  {
    cohort::data::WriterSpec spec;
    spec.num_samples = 1000;
    spec.sample_shape = {8};
    cohort::data::DatasetWriter writer(path, spec);  // abandoned: no commit
  }
  expect_only_the_old_file(dir, path, size);
}

// A writer never leaves a file behind when it fails: not when its constructor throws after
// creating the temporary file, not when the committed result would be invalid (the old file
// stays as it was in both cases).
BOOST_AUTO_TEST_CASE(a_failed_writer_leaves_nothing_and_keeps_the_old_file) {
  cohort::test::ScratchDir dir;
  const auto path = make_rows(dir.file("keep.h5"), 0, 5);
  const auto size = std::filesystem::file_size(path);
  cohort::data::WriterSpec spec;
  spec.num_samples = 4;
  spec.sample_shape.assign(40, 1);  // HDF5 allows 32 dimensions: create_dataset throws
  BOOST_CHECK_THROW(cohort::data::DatasetWriter(path, spec), cohort::IoError);
  spec.sample_shape = {8};
  spec.mean = {std::nan("")};  // describe() refuses a non-finite mean
  {
    cohort::data::DatasetWriter writer(path, spec);
    const std::vector<float> x(32, 1.0f);
    const std::vector<std::int64_t> y(4, 0);
    writer.write_samples(0, 4, x.data(), y.data());
    try {
      writer.commit();
      BOOST_FAIL("an invalid dataset was committed");
    } catch (const cohort::IoError& error) {
      BOOST_TEST(std::string(error.what()).find("attribute 'mean'") != std::string::npos);
    }
  }
  expect_only_the_old_file(dir, path, size);
}

BOOST_AUTO_TEST_CASE(an_index_outside_the_dataset_is_an_error_naming_it) {
  cohort::test::ScratchDir dir;
  BatchReader reader(make_rows(dir.file("r.h5"), 0, 10), {});
  try {
    reader.read({3, 10});
    BOOST_FAIL("no error");
  } catch (const cohort::UsageError& error) {
    BOOST_TEST(std::string(error.what()).find("sample index 10 outside 0..9") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(pread_rows_equal_hdf5_reads_and_catch_a_truncated_file) {
  cohort::test::ScratchDir dir;
  // Chunks of 21 rows: runs cross chunk boundaries.
  const auto path = make_rows(dir.file("p.h5"), 0, 100, {3, 4, 4}, 4096);
  ReaderOptions fast = raw_values(), slow = raw_values();
  slow.pread_rows = false;
  BatchReader a(path, fast), b(path, slow);
  const std::vector<std::int64_t> indices{99, 0, 20, 21, 22, 41, 42, 43, 44, 63, 5, 77, 78};
  const auto x = a.read(indices), y = b.read(indices);
  BOOST_TEST(x.inputs.equal(y.inputs));
  BOOST_TEST(x.targets.equal(y.targets));
  BOOST_TEST(a.stats().pread_runs == a.stats().runs * 2);  // inputs and targets
  BOOST_TEST(b.stats().pread_runs == 0);
  // The file shrinks under an open reader: a clear error, not garbage.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  try {
    a.read({98, 99});
    BOOST_FAIL("no error");
  } catch (const cohort::IoError& error) {
    BOOST_TEST(std::string(error.what()).find("p.h5") != std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()
