// The failed-step mark (env/step_marker.hpp) between a failing rank and `cohort supervise`: the
// first code written stands, a mark is read back exactly or not at all, and a step whose rank left
// one is ended by run_forwarding (ops/step_runner.hpp) a grace after it, where srun would have
// waited for a node it cannot reach (here: a step that would sleep a minute).
#include <stdlib.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "cohort/env/step_marker.hpp"
#include "cohort/ops/step_runner.hpp"

namespace {

struct MarkFile {
  std::string path =
      (std::filesystem::temp_directory_path() / ("cohort-step-mark-" + std::to_string(::getpid())))
          .string();
  MarkFile() { std::filesystem::remove(path); }
  ~MarkFile() {
    std::filesystem::remove(path);
    ::unsetenv(cohort::env::kStepFailedVariable);
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(ops_step_mark)

BOOST_AUTO_TEST_CASE(the_first_failing_rank_leaves_its_code) {
  MarkFile mark;
  cohort::env::mark_step_failed(76);  // no variable: nothing written
  BOOST_TEST(!std::filesystem::exists(mark.path));
  ::setenv(cohort::env::kStepFailedVariable, mark.path.c_str(), 1);
  cohort::env::mark_step_failed(77);
  cohort::env::mark_step_failed(76);  // a second rank: the first code stands
  BOOST_TEST(cohort::ops::read_step_mark(mark.path).value_or(0) == 77);
  for (const char* text : {"", "76\n", "7a6\n", "0760", "000\n", "999\n"}) {
    std::ofstream(mark.path, std::ios::trunc) << text;
    BOOST_TEST(!cohort::ops::read_step_mark(mark.path).has_value());
  }
  BOOST_TEST(!cohort::ops::read_step_mark(mark.path + ".none").has_value());
}

BOOST_AUTO_TEST_CASE(a_marked_step_is_ended_after_the_grace) {
  MarkFile mark;
  const auto start = std::chrono::steady_clock::now();
  const auto end = cohort::ops::run_forwarding(
      {"bash", "-c", "sleep 0.3; printf '076\\n' >\"$0\"; exec sleep 60", mark.path},
      std::chrono::seconds(0), cohort::UniqueFd(), false, mark.path);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST(end.marked.value_or(0) == 76);
  BOOST_TEST(end.code == 128 + 9);  // SIGKILL after the grace
  BOOST_TEST(!end.timed_out);
  BOOST_TEST(seconds < 30);  // not the minute the step would have taken
  // Without a mark the step runs to its end.
  const auto plain = cohort::ops::run_forwarding({"bash", "-c", "exit 3"}, std::chrono::seconds(0),
                                                 cohort::UniqueFd(), false, mark.path + ".none");
  BOOST_TEST(plain.code == 3);
  BOOST_TEST(!plain.marked.has_value());
}

BOOST_AUTO_TEST_SUITE_END()
