// The restart record's two halves (ops/restart_record.hpp) on real files: supervise's pending
// record, completed by the new run's rank 0 into the metrics record and its line, with the seconds
// lost in parts that add up; a record never completed comes back as such; another job's is left
// alone; a bad file is a warning, never a crash.
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "cohort/ops/restart_record.hpp"

namespace ops = cohort::ops;

namespace {

struct RunDir {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("cohort-restart-" + std::to_string(::getpid()));
  RunDir() { std::filesystem::create_directories(dir); }
  ~RunDir() { std::filesystem::remove_all(dir); }
  std::string path() const { return dir.string(); }
};

ops::PendingRestart pending() {
  ops::PendingRestart p;
  p.job = "12";
  p.number = 1;
  p.kind = "in_allocation";
  p.budget = "failure 1/3";
  p.cause = "step failed (exit 76)";
  p.failed_at_step = 212;
  p.resumed_from = "step-00000200";
  p.left_out = {{"n2", "not responding"}};
  p.spares = {"n4"};
  p.nodes = {"n1", "n3", "n4"};
  p.last_step_ms = 1'000'000;
  p.decided_ms = 1'014'100;
  return p;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ops_restart_record)

BOOST_AUTO_TEST_CASE(a_pending_restart_completed_by_the_next_run) {
  RunDir d;
  BOOST_TEST(!ops::write_pending_restart(d.path(), pending()).has_value());
  BOOST_TEST(!ops::complete_restart(d.path(), "13", 200, 0.9, 0.4, 1'021'300).has_value());
  BOOST_TEST(std::filesystem::exists(ops::pending_restart_path(d.path())));  // not 13's
  const auto done = ops::complete_restart(d.path(), "12", 200, 0.9, 0.4, 1'021'300);
  BOOST_REQUIRE(done.has_value());
  BOOST_TEST(!std::filesystem::exists(ops::pending_restart_path(d.path())));
  const auto& lost = done->record.at("seconds_lost");
  BOOST_TEST(lost.at("detection").get<double>() == 14.1, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(lost.at("start").get<double>() == 5.9, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(lost.at("total").get<double>() == 21.3, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(lost.at("detection").get<double>() + lost.at("start").get<double>() +
                     lost.at("load").get<double>() + lost.at("first_step").get<double>() ==
                 lost.at("total").get<double>(),
             boost::test_tools::tolerance(1e-9));
  BOOST_TEST(done->record.at("redone_steps").get<int>() == 12);
  BOOST_TEST(done->record.at("event").get<std::string>() == "restart");
  BOOST_TEST(done->line ==
             "restart 1 in job 12 (in allocation, failure 1/3): n2 (not responding) left out, "
             "spare n4 used; 21.3 s lost: detection 14.1 s, start 5.9 s, load 0.9 s, first step "
             "0.4 s; 12 steps redone");
}

BOOST_AUTO_TEST_CASE(a_record_never_completed_comes_back_when_the_next_is_written) {
  RunDir d;
  ops::write_pending_restart(d.path(), pending());
  auto second = pending();
  second.number = 2;
  const auto stale = ops::write_pending_restart(d.path(), second);
  BOOST_REQUIRE(stale.has_value());
  BOOST_TEST(stale->at("completed").get<bool>() == false);
  BOOST_TEST(stale->at("restart").get<int>() == 1);
  BOOST_TEST(stale->at("message").get<std::string>().find(
                 "the new step failed before its first step") != std::string::npos);
  auto other = pending();
  other.job = "13";  // another job's record is not this job's history
  BOOST_TEST(!ops::write_pending_restart(d.path(), other).has_value());
}

BOOST_AUTO_TEST_CASE(a_bad_pending_file_is_a_warning_not_a_crash) {
  RunDir d;
  const char* cases[] = {"", "[1]", "{\"job\": \"12\"}", "{\"job\": 12, \"kind\": 1}",
                         "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["};
  for (const char* text : cases) {
    std::ofstream(ops::pending_restart_path(d.path())) << text;
    BOOST_TEST(!ops::complete_restart(d.path(), "12", 0, 0, 0, 1).has_value());
    BOOST_TEST(!ops::write_pending_restart(d.path(), pending()).has_value());
  }
  std::filesystem::remove(ops::pending_restart_path(d.path()));
  std::filesystem::create_directory(ops::pending_restart_path(d.path()));  // not a file
  BOOST_TEST(!ops::complete_restart(d.path(), "12", 0, 0, 0, 1).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
