#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>  // the plain (SSE2) XXH3, as the reference

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/input.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
namespace io = cohort::io;

namespace {

using cohort::test::fresh_dir;
using cohort::test::read;

int entries(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += (void(e), 1);
  return n;
}

// Arms the io module's fault point for one scope.
struct InjectedRenameFailure {
  explicit InjectedRenameFailure(const std::string& target) {
    ::setenv("COHORT_FAULT_IO", ("rename:" + target).c_str(), 1);
  }
  ~InjectedRenameFailure() { ::unsetenv("COHORT_FAULT_IO"); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(io_files)

BOOST_AUTO_TEST_CASE(a_file_is_replaced_whole_at_both_durabilities) {
  const auto dir = fresh_dir("replace");
  const std::string path = (dir / "m.prom").string();
  io::write_file_atomically(path, "a 1\n");
  io::write_file_atomically(path, "b 2\n", io::Durability::kAtomic);
  BOOST_TEST(read(path) == "b 2\n");
  BOOST_TEST(entries(dir) == 1);  // no temporary left behind
  BOOST_CHECK_THROW(io::write_file_atomically((dir / "no/such/dir/m.prom").string(), "x"),
                    cohort::IoError);
  BOOST_TEST(entries(dir) == 1);
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(a_failed_rename_is_reported_and_leaves_the_old_file_and_no_temporary) {
  const auto dir = fresh_dir("rename");
  const std::string path = (dir / "victim.txt").string();
  io::write_file_atomically(path, "old\n");
  for (const auto durability : {io::Durability::kDurable, io::Durability::kAtomic}) {
    InjectedRenameFailure fault("victim");
    try {
      io::write_file_atomically(path, "new\n", durability);
      BOOST_FAIL("a failed rename was not reported");
    } catch (const cohort::IoError& e) {
      const std::string what = e.what();
      BOOST_TEST(what.find("victim.txt") != std::string::npos, what);
      BOOST_TEST(what.find("injected by COHORT_FAULT_IO") != std::string::npos, what);
    }
    BOOST_TEST(read(path) == "old\n");
    BOOST_TEST(entries(dir) == 1);
  }
  // commit_file, which the dataset writer, `data stage` and `ckpt export` use.
  const std::string temporary = path + ".tmp-1";
  std::ofstream(temporary) << "staged\n";
  {
    InjectedRenameFailure fault("victim");
    BOOST_CHECK_THROW(io::commit_file(temporary, path), cohort::IoError);
  }
  BOOST_TEST(!fs::exists(temporary));
  BOOST_TEST(read(path) == "old\n");
  std::ofstream(temporary) << "staged\n";
  io::commit_file(temporary, path);  // unarmed: it goes through
  BOOST_TEST(read(path) == "staged\n");
  BOOST_TEST(entries(dir) == 1);
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(a_malformed_fault_setting_injects_nothing) {
  const auto dir = fresh_dir("fault");
  const std::string path = (dir / "victim.txt").string();
  for (const char* setting : {"rename:", "rename", "victim", "RENAME:victim", ""}) {
    ::setenv("COHORT_FAULT_IO", setting, 1);
    io::write_file_atomically(path, setting);  // no target text: the rename goes through
    BOOST_TEST(read(path) == setting);
  }
  ::unsetenv("COHORT_FAULT_IO");
  BOOST_TEST(entries(dir) == 1);
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(checksums_round_trip_and_refuse_malformed_text) {
  const std::string text = io::format_checksum(0x0123456789abcdefULL);
  BOOST_TEST(text == "xxh3-64:0123456789abcdef");
  BOOST_TEST(io::parse_checksum(text) == 0x0123456789abcdefULL);
  BOOST_CHECK_THROW(io::parse_checksum("xxh3-64:0123"), cohort::IoError);
  BOOST_CHECK_THROW(io::parse_checksum("md5:0123456789abcdef"), cohort::IoError);
  BOOST_CHECK_THROW(io::parse_checksum("xxh3-64:0123456789ABCDEF"), cohort::IoError);
}

// The checksums go through libxxhash's run-time dispatch (AVX2/AVX-512 where the CPU has them):
// every length class of XXH3 (0-16, 17-128, 129-240, long, past one 1 KiB stripe block) and
// arbitrary piece boundaries give the plain library's value, which checkpoints written before
// (and on machines without those units) carry.
BOOST_AUTO_TEST_CASE(checksums_match_the_plain_xxh3_in_one_piece_and_in_many) {
  BOOST_TEST(io::bytes_checksum("", 0) == "xxh3-64:2d06800538d394c2");  // the published value
  std::vector<unsigned char> bytes((5u << 20) + 13);
  std::uint32_t state = 7;
  for (auto& b : bytes)
    b = static_cast<unsigned char>((state = state * 1664525u + 1013904223u) >> 24);
  for (const std::size_t n : {1u, 3u, 16u, 17u, 128u, 129u, 240u, 241u, 1024u, 1025u, 65537u,
                              static_cast<unsigned>(bytes.size())}) {
    const std::string plain = io::format_checksum(XXH3_64bits(bytes.data(), n));
    BOOST_TEST(io::bytes_checksum(bytes.data(), n) == plain);
    io::StreamingChecksum pieces;
    for (std::size_t at = 0, piece = 1; at < n; at += piece, piece = piece * 3 + 5) {
      pieces.add(bytes.data() + at, std::min(piece, n - at));
    }
    BOOST_TEST(pieces.result() == plain, "length " << n);
  }
}

// The one way in: every kind of path that is not a regular file is refused at once (a FIFO does
// not wait for a writer) with what it is, under the caller's error type and label.
BOOST_AUTO_TEST_CASE(an_input_that_is_not_a_regular_file_says_what_it_is) {
  const auto dir = fresh_dir("input");
  BOOST_REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  fs::create_directory(dir / "dir");
  fs::create_symlink(dir / "gone", dir / "dangling");
  fs::create_symlink(dir / "loop2", dir / "loop1");
  fs::create_symlink(dir / "loop1", dir / "loop2");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {(dir / "fifo").string(), "a FIFO, not a regular file"},
      {(dir / "dir").string(), "a directory, not a regular file"},
      {"/dev/null", "a device, not a regular file"},
      {(dir / "dangling").string(),
       "a link to " + (dir / "gone").string() + ", which does not exist"},
      {(dir / "loop1").string(), "a loop of symbolic links"},
      {(dir / "missing").string(), "no such file or directory"}};
  for (const auto& [path, what] : cases) {
    try {
      io::InputFile::open<cohort::ConfigError>(path, 1 << 20, "model.file");
      BOOST_ERROR(path << " was opened");
    } catch (const cohort::ConfigError& e) {
      BOOST_TEST(std::string(e.what()) == path + ": model.file: " + what);
    }
  }
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(an_input_is_bounded_and_read_through_the_descriptor_it_was_checked_by) {
  const auto dir = fresh_dir("input-read");
  const auto path = (dir / "data.txt").string();
  io::write_file_atomically(path, "twelve bytes");
  BOOST_CHECK_THROW(io::InputFile::open(path, 11), cohort::IoError);  // one byte over
  const auto file = io::InputFile::open(path, 12);
  BOOST_TEST(file.size() == 12);
  // The name now points elsewhere; the open file (and its /proc/self/fd name) does not.
  io::write_file_atomically(path, "another file");
  BOOST_TEST(file.read_all() == "twelve bytes");
  BOOST_TEST(read(file.fd_path()) == "twelve bytes");
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
