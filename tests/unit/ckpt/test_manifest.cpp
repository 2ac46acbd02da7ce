#include <boost/test/unit_test.hpp>

#include "cohort/ckpt/manifest.hpp"
#include "cohort/error.hpp"

using cohort::ckpt::is_contained_path;
using cohort::ckpt::Manifest;

namespace {

Manifest sample() {
  Manifest m;
  m.step = 1200;
  m.epoch = 3;
  m.samples_seen = 76800;
  m.world_size = 2;
  m.nodes = 1;
  m.config_hash = "xxh3-64:0123456789abcdef";
  m.cohort_version = "0.1.0";
  m.created = "2026-12-02T19:00:00Z";
  m.shards = {{"shard-00000-of-00002.h5", 0, 4096, ""}, {"shard-00001-of-00002.h5", 1, 4000, ""}};
  m.tensors = {{"fc.weight",
                "float32",
                {4, 3},
                {{0, 0, 7, "xxh3-64:0000000000000001"}, {1, 7, 5, "xxh3-64:0000000000000002"}}},
               {"fc.bias", "float32", {4}, {{1, 0, 4, "xxh3-64:0000000000000003"}}}};
  return m;
}

// The error parse() throws for `text`, or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    Manifest::parse(text, "ckpt/step-00001200/manifest.json");
  } catch (const cohort::IoError& e) {
    return e.what();
  }
  return "";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  BOOST_REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ckpt_manifest)

BOOST_AUTO_TEST_CASE(round_trip) {
  const Manifest m = sample();
  const Manifest back = Manifest::parse(m.to_json(), "test");
  BOOST_TEST(back.to_json() == m.to_json());
  BOOST_TEST(back.step == 1200);
  BOOST_TEST(back.find("fc.weight")->slices[1].offset == 7);
  BOOST_TEST(back.find("missing") == nullptr);
}

BOOST_AUTO_TEST_CASE(paths_that_leave_the_directory_are_rejected) {
  const std::string good = sample().to_json();
  for (const char* bad : {"../../x", "/etc/passwd", "a/../../x", "", ".", "a/.."}) {
    const auto error = error_of(replaced(good, "shard-00000-of-00002.h5", bad));
    BOOST_TEST(error.find("leaves the checkpoint directory") != std::string::npos, bad);
    BOOST_TEST(error.find("manifest.json") != std::string::npos);
  }
  BOOST_TEST(is_contained_path("shard-0.h5"));
  BOOST_TEST(is_contained_path("sub/../shard-0.h5"));
  BOOST_TEST(!is_contained_path("sub/../../shard-0.h5"));
}

BOOST_AUTO_TEST_CASE(bad_manifests_name_the_field) {
  const std::string good = sample().to_json();
  BOOST_TEST(error_of("{not json").find("not valid JSON") != std::string::npos);
  BOOST_TEST(error_of("{}").find("not a Cohort checkpoint") != std::string::npos);
  BOOST_TEST(error_of(replaced(good, "\"format_version\": 1", "\"format_version\": 9"))
                 .find("format_version 9 is not supported") != std::string::npos);
  BOOST_TEST(error_of(replaced(good, "\"step\": 1200,", "")).find("missing field 'step'") !=
             std::string::npos);
  BOOST_TEST(error_of(replaced(good, "\"epoch\": 3", "\"epoch\": \"three\""))
                 .find("field 'epoch' has the wrong type") != std::string::npos);
  BOOST_TEST(error_of(replaced(good, "\"offset\": 7", "\"offset\": 6")).find("gaps or overlaps") !=
             std::string::npos);
  BOOST_TEST(error_of(replaced(good, "\"count\": 5", "\"count\": 4")).find("cover 11 of 12") !=
             std::string::npos);
  BOOST_TEST(error_of(replaced(good, "\"shard\": 1", "\"shard\": 2")).find("names shard 2") !=
             std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
