#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <fstream>
#include <numeric>
#include <vector>

#include "../data/data_fixture.hpp"
#include "cohort/ckpt/shard_file.hpp"
#include "cohort/error.hpp"

using cohort::ckpt::ShardReader;
using cohort::ckpt::ShardSlice;

namespace {

bool message_has(const cohort::IoError& e, const char* word) {
  return std::string(e.what()).find(word) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ckpt_shard_file)

BOOST_AUTO_TEST_CASE(slices_and_rank_state_round_trip) {
  cohort::test::ScratchDir dir;
  std::vector<float> weight(700);
  std::iota(weight.begin(), weight.end(), 0.5f);
  std::vector<std::int64_t> steps{41};
  std::vector<std::uint16_t> half{0x3f80, 0x4000, 0xc040};  // bfloat16 1, 2, -3
  const std::string state("sampler 12\0rng", 14);
  const auto sums =
      cohort::ckpt::write_shard(dir.file("s.h5"), {1, 3, 1200},
                                {{"fc.weight", "float32", {40, 20}, 100, 700, weight.data()},
                                 {"step", "int64", {}, 0, 1, steps.data()},
                                 {"emb.weight", "bfloat16", {3}, 0, 3, half.data()}},
                                state);
  BOOST_TEST(sums.checksums.size() == 3u);
  BOOST_TEST(sums.checksums[0] == cohort::io::bytes_checksum(weight.data(), 700 * 4));
  // Where each slice's bytes lie, and the checksum of every other byte.
  BOOST_REQUIRE(sums.addresses.size() == 3u);
  std::ifstream raw(dir.file("s.h5"), std::ios::binary);
  std::vector<float> stored(700);
  raw.seekg(sums.addresses[0]);
  raw.read(reinterpret_cast<char*>(stored.data()), 700 * 4);
  BOOST_TEST(stored == weight);
  const std::vector<cohort::ckpt::DataExtent> extents = {
      {sums.addresses[0], 700 * 4}, {sums.addresses[1], 8}, {sums.addresses[2], 6}};
  BOOST_TEST(cohort::ckpt::metadata_checksum(dir.file("s.h5"), extents) == sums.metadata_checksum);

  ShardReader reader(dir.file("s.h5"));
  BOOST_TEST(reader.header().rank == 1);
  BOOST_TEST(reader.header().world_size == 3);
  BOOST_TEST(reader.header().step == 1200);
  BOOST_TEST(reader.slice_offset("fc.weight") == 100);
  std::vector<float> part(50);
  reader.read("fc.weight", "float32", 600, 50, part.data());
  BOOST_TEST(part.front() == 600.5f);
  BOOST_TEST(part.back() == 649.5f);
  std::int64_t step = 0;
  reader.read("step", "int64", 0, 1, &step);
  BOOST_TEST(step == 41);
  std::vector<std::uint16_t> back(3);
  reader.read("emb.weight", "bfloat16", 0, 3, back.data());
  BOOST_TEST(back == half, boost::test_tools::per_element());
  BOOST_TEST(reader.rank_state() == state);
}

BOOST_AUTO_TEST_CASE(bad_shards_and_requests_are_io_errors) {
  cohort::test::ScratchDir dir;
  const float x[2] = {1, 2};
  cohort::ckpt::write_shard(dir.file("s.h5"), {0, 1, 5}, {{"x", "float32", {2}, 0, 2, x}}, "");
  ShardReader reader(dir.file("s.h5"));
  float out[2];
  BOOST_CHECK_EXCEPTION(reader.read("x", "float64", 0, 2, out), cohort::IoError,
                        [](const auto& e) { return message_has(e, "stored as float32"); });
  BOOST_CHECK_EXCEPTION(reader.read("missing", "float32", 0, 1, out), cohort::IoError,
                        [](const auto& e) { return message_has(e, "slice missing"); });
  BOOST_CHECK_EXCEPTION(reader.read("x", "float32", 1, 2, out), cohort::IoError,
                        [](const auto& e) { return message_has(e, "outside"); });
  std::ofstream(dir.file("junk.h5")) << "not hdf5";
  BOOST_CHECK_THROW(ShardReader(dir.file("junk.h5")), cohort::IoError);
  BOOST_CHECK_EXCEPTION(
      cohort::ckpt::write_shard(dir.file("t.h5"), {}, {{"a/b", "float32", {1}, 0, 1, x}}, ""),
      cohort::IoError, [](const auto& e) { return message_has(e, "contains '/'"); });
  BOOST_CHECK_EXCEPTION(
      cohort::ckpt::write_shard(dir.file("u.h5"), {}, {{"a", "complex64", {1}, 0, 1, x}}, ""),
      cohort::IoError, [](const auto& e) { return message_has(e, "unsupported dtype"); });
}

// The metadata checksum sees every byte outside the slices and none inside them, and refuses
// extents that overlap or leave the file.
BOOST_AUTO_TEST_CASE(the_metadata_checksum_covers_every_byte_outside_the_slices) {
  cohort::test::ScratchDir dir;
  const std::vector<float> x(64, 1.5f);
  const auto written = cohort::ckpt::write_shard(
      dir.file("s.h5"), {0, 1, 5}, {{"x", "float32", {64}, 0, 64, x.data()}}, "rank state");
  const std::vector<cohort::ckpt::DataExtent> extents = {{written.addresses[0], 64 * 4}};
  const auto flip = [&](std::int64_t at) {
    std::fstream f(dir.file("s.h5"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(at);
    const char c = static_cast<char>(f.get() ^ 0xff);
    f.seekp(at);
    f.put(c);
  };
  flip(written.addresses[0] + 17);  // a slice's byte: the slice checksum's, not this one's
  BOOST_TEST(cohort::ckpt::metadata_checksum(dir.file("s.h5"), extents) ==
             written.metadata_checksum);
  flip(written.addresses[0] + 17);
  flip(8);  // the superblock
  BOOST_TEST(cohort::ckpt::metadata_checksum(dir.file("s.h5"), extents) !=
             written.metadata_checksum);
  flip(8);
  BOOST_CHECK_EXCEPTION(cohort::ckpt::metadata_checksum(dir.file("s.h5"), {{0, 8}, {4, 8}}),
                        cohort::IoError, [](const auto& e) { return message_has(e, "overlap"); });
  BOOST_CHECK_EXCEPTION(
      cohort::ckpt::metadata_checksum(dir.file("s.h5"), {{written.addresses[0], 1 << 30}}),
      cohort::IoError, [](const auto& e) { return message_has(e, "reach past"); });
}

BOOST_AUTO_TEST_SUITE_END()
