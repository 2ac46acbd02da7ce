// io::OutputPlan, io::TemporaryFile and io::RunFile against real files, links and FIFOs: what a
// command may write, and that a name already taken is never written through or removed.
#include <sys/stat.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/output.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;
namespace io = cohort::io;

namespace {

using cohort::test::fresh_dir;
using cohort::test::read;

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// The UsageError check() throws, or "" when it accepts the plan.
std::string refusal(const io::OutputPlan& plan) {
  try {
    plan.check();
  } catch (const cohort::UsageError& e) {
    return e.what();
  }
  return {};
}

bool has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(io_output)

BOOST_AUTO_TEST_CASE(an_output_that_is_an_input_through_any_name_is_refused) {
  const auto dir = fresh_dir("output-same");
  const std::string in = (dir / "in.h5").string();
  write(in, "data");
  fs::create_hard_link(in, dir / "hard.h5");
  fs::create_symlink(in, dir / "soft.h5");
  fs::create_directories(dir / "sub");
  for (const std::string& out : {in, (dir / "hard.h5").string(), (dir / "soft.h5").string(),
                                 (dir / "sub/../in.h5").string()}) {
    const auto why = refusal(io::OutputPlan().read(in, "--data").write(out, "--out"));
    BOOST_TEST(has(why, "is the same file as --data"), out << ": " << why);
  }
  // An existing file inside an input directory (a shard of a dataset) is an input too.
  const auto why = refusal(io::OutputPlan().read(dir.string(), "--data").write(in, "--out"));
  BOOST_TEST(has(why, "is the same file as --data"), why);
  // A new file in an input directory would be read as one of its files: refused too.
  const auto inside =
      refusal(io::OutputPlan().read(dir.string(), "DIR").write((dir / "new.h5").string(), "--out"));
  BOOST_TEST(has(inside, "is inside DIR"), inside);
  // Distinct files are fine.
  BOOST_TEST(refusal(io::OutputPlan().read(in, "--data").write((dir / "new.h5").string(), "--out"))
                 .empty());
  BOOST_TEST(read(in) == "data");
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(two_outputs_that_are_one_file_are_refused_before_either_exists) {
  const auto dir = fresh_dir("output-pair");
  const auto a = (dir / "a.h5").string();
  const auto why =
      refusal(io::OutputPlan().write(a, "--train").write((dir / "." / "a.h5").string(), "--val"));
  BOOST_TEST(has(why, "--val is the same file as --train"), why);
  BOOST_TEST(!fs::exists(a));
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(an_output_that_is_not_a_replaceable_file_is_refused_saying_what_it_is) {
  const auto dir = fresh_dir("output-kinds");
  fs::create_directories(dir / "folder");
  BOOST_REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  fs::create_symlink("nowhere/x.h5", dir / "dangling");
  const std::pair<std::string, std::string> cases[] = {
      {(dir / "folder").string(), "a directory"},
      {(dir / "fifo").string(), "a FIFO"},
      {"/dev/null", "a device"},
      {(dir / "dangling").string(), "a link to nowhere/x.h5, which does not exist"},
      {(dir / "missing/out.h5").string(), "does not exist"},
      {"", "an empty path"}};
  for (const auto& [out, needle] : cases) {
    const auto why = refusal(io::OutputPlan().write(out, "--out"));
    BOOST_TEST(has(why, needle), out << ": " << why);
  }
  // A directory output (shards) may exist as a directory, not as a file.
  BOOST_TEST(refusal(io::OutputPlan().write((dir / "folder").string(), "--out",
                                            io::OutputPlan::Kind::kDirectory))
                 .empty());
  BOOST_TEST(has(refusal(io::OutputPlan().write((dir / "fifo").string(), "--out",
                                                io::OutputPlan::Kind::kDirectory)),
                 "not a directory to write in"));
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(a_temporary_never_writes_through_or_removes_what_is_at_its_name) {
  const auto dir = fresh_dir("output-temporary");
  const auto victim = dir / "victim";
  write(victim, "someone's");
  const auto out = (dir / "out.h5").string();
  {
    io::TemporaryFile temporary(out);
    fs::create_symlink(victim, temporary.path());  // planted where the temporary goes
    BOOST_CHECK_THROW(temporary.create(), cohort::IoError);
  }  // destroyed: the planted link is not its to remove
  const std::string leftover = out + ".tmp-" + std::to_string(getpid());
  BOOST_TEST(fs::is_symlink(leftover));
  BOOST_TEST(read(victim) == "someone's");
  // The next writer of this pid takes another name, and the leftover stays as it is.
  io::write_file_atomically(out, "first");
  BOOST_TEST(read(out) == "first");
  BOOST_TEST(fs::is_symlink(leftover));
  BOOST_TEST(read(victim) == "someone's");
  BOOST_TEST(io::TemporaryFile(out).path() == leftover + "-1");
  fs::remove(leftover);
  fs::remove(out);
  {
    io::TemporaryFile temporary(out);
    temporary.write("half");
  }  // never committed: removed, nothing at the output
  BOOST_TEST(!fs::exists(out));
  BOOST_TEST(!fs::exists(out + ".tmp-" + std::to_string(getpid())));
  // An output that is a link is replaced by the file; the file it named stays as it was.
  fs::create_symlink(victim, out);
  io::write_file_atomically(out, "new");
  BOOST_TEST(!fs::is_symlink(out));
  BOOST_TEST(read(out) == "new");
  BOOST_TEST(read(victim) == "someone's");
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(a_run_file_refuses_links_and_non_files_and_appends_or_replaces_its_own) {
  const auto dir = fresh_dir("output-run");
  const auto victim = dir / "victim";
  write(victim, "someone's");
  fs::create_symlink(victim, dir / "linked.jsonl");
  for (const auto mode :
       {io::RunFile::Mode::kAppend, io::RunFile::Mode::kReplace, io::RunFile::Mode::kNew}) {
    BOOST_CHECK_THROW(io::RunFile((dir / "linked.jsonl").string(), mode), cohort::IoError);
  }
  BOOST_TEST(read(victim) == "someone's");
  BOOST_REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  BOOST_CHECK_THROW(io::RunFile((dir / "fifo").string(), io::RunFile::Mode::kAppend),
                    cohort::IoError);  // and does not wait for a reader
  const auto own = (dir / "metrics.jsonl").string();
  io::RunFile(own, io::RunFile::Mode::kNew).write("one\n");
  io::RunFile(own, io::RunFile::Mode::kAppend).write("two\n");
  BOOST_TEST(read(own) == "one\ntwo\n");
  BOOST_CHECK_THROW(io::RunFile(own, io::RunFile::Mode::kNew), cohort::IoError);
  fs::create_hard_link(own, dir / "snapshot.jsonl");  // a copy made with cp -al
  io::RunFile(own, io::RunFile::Mode::kReplace).write("three\n");
  BOOST_TEST(read(own) == "three\n");
  BOOST_TEST(read(dir / "snapshot.jsonl") == "one\ntwo\n");
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
