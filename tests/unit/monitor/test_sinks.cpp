// The monitor's building blocks that need no MPI: the step timer, the Prometheus rendering, the
// atomic textfile, the JSONL reader's restart handling, the report's charts, the samplers.
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include <unistd.h>

#include "cohort/error.hpp"
#include "cohort/monitor/report.hpp"
#include "cohort/monitor/sinks.hpp"
#include "cohort/monitor/system_sampler.hpp"

using namespace cohort::monitor;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("cohort-unit-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void spin(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  volatile double x = 0;
  while (std::chrono::steady_clock::now() < end) x = x + 1;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(monitor_sinks)

BOOST_AUTO_TEST_CASE(step_timer_phases_sum_to_the_step) {
  StepTimer timer;
  timer.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  timer.lap(Phase::kData);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  timer.lap(Phase::kForward);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  timer.lap(Phase::kForward);                                 // a second micro-batch adds up
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // unclaimed: other
  StepSample s;
  timer.end(s);
  double sum = 0;
  for (double p : s.phase) sum += p;
  BOOST_TEST(std::abs(sum - s.seconds) < 1e-9);
  BOOST_TEST(s.phase[static_cast<int>(Phase::kData)] >= 0.020);
  BOOST_TEST(s.phase[static_cast<int>(Phase::kForward)] >= 0.020);
  BOOST_TEST(s.phase[static_cast<int>(Phase::kOther)] >= 0.005);
  BOOST_TEST(s.phase[static_cast<int>(Phase::kBackward)] == 0.0);
}

BOOST_AUTO_TEST_CASE(prometheus_text_groups_and_escapes) {
  std::vector<MetricSample> samples = {
      {"cohort_a", "first", {{"run", "x\"y\\z\nw"}}, 1.5},
      {"cohort_b", "second", {{"phase", "data"}}, 2},
      {"cohort_b", "second", {{"phase", "comm"}}, std::nan("")},
  };
  const std::string text = prometheus_text(samples);
  BOOST_TEST(text ==
             "# HELP cohort_a first\n# TYPE cohort_a gauge\n"
             "cohort_a{run=\"x\\\"y\\\\z\\nw\"} 1.5\n"
             "# HELP cohort_b second\n# TYPE cohort_b gauge\n"
             "cohort_b{phase=\"data\"} 2\ncohort_b{phase=\"comm\"} NaN\n");
}

BOOST_AUTO_TEST_CASE(metric_samples_cover_the_summary) {
  Summary s;
  s.step = 40;
  s.ranks = 2;
  s.rank_busy = {0.01, 0.02};
  s.slowest_rank = 1;
  s.samples_per_s = 1234;
  const auto samples = metric_samples(s, 100, {{"job", "7"}}, {"straggler"}, rank_times(s));
  const std::string text = prometheus_text(samples);
  BOOST_TEST(text.find("cohort_samples_per_second{job=\"7\"} 1234\n") != std::string::npos);
  BOOST_TEST(text.find("cohort_rank_busy_seconds{job=\"7\",rank=\"1\"} 0.02\n") !=
             std::string::npos);
  BOOST_TEST(text.find("cohort_diagnosis{job=\"7\",rule=\"straggler\"} 1\n") != std::string::npos);
  BOOST_TEST(text.find("cohort_diagnosis{job=\"7\",rule=\"data-bound\"} 0\n") != std::string::npos);
  BOOST_TEST(text.find("cohort_gpu_") == std::string::npos);  // no NVML: no GPU gauges
  // A node's endpoint: only the ranks it is given, under their own numbers.
  const std::string node = prometheus_text(metric_samples(s, 100, {}, {}, {{5, 0.03, 0.04}}));
  BOOST_TEST(node.find("cohort_rank_busy_seconds{rank=\"5\"} 0.03\n") != std::string::npos);
  BOOST_TEST(node.find("rank=\"1\"") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(history_drops_steps_a_restart_repeats) {
  const auto dir = fresh_dir("history");
  {
    JsonlSink sink((dir / "metrics.jsonl").string(), false);
    sink.write({{"event", "run"}, {"ranks", 2}, {"total_steps", 6}, {"restart", 0}});
    for (int i = 1; i <= 5; ++i) sink.write({{"event", "step"}, {"step", i}, {"loss", 1.0 / i}});
    sink.write({{"event", "run"}, {"ranks", 2}, {"total_steps", 6}, {"restart", 1}});
    sink.write({{"event", "resume"}, {"step", 3}, {"from", "c/step-3"}});
    for (int i = 4; i <= 6; ++i) sink.write({{"event", "step"}, {"step", i}, {"loss", 2.0}});
  }
  std::ofstream(dir / "metrics.jsonl", std::ios::app) << "{\"event\": \"st";  // torn last line
  RunFollower follower(dir.string());
  BOOST_TEST(follower.poll());
  const auto& h = follower.history();
  BOOST_TEST_REQUIRE(h.steps.size() == 6u);
  BOOST_TEST(h.steps[2].loss == 1.0 / 3);
  BOOST_TEST(h.steps[3].loss == 2.0);  // the second start's step 4
  BOOST_TEST(h.runs.size() == 2u);
  BOOST_TEST(h.bad_lines == 0);
  BOOST_TEST(h.events.size() == 2u);  // restart, resume
  BOOST_TEST(!follower.poll());       // nothing complete was added
  std::ofstream(dir / "metrics.jsonl", std::ios::app) << "ep\", \"step\": 7, \"loss\": 3}\n";
  BOOST_TEST(follower.poll());
  BOOST_TEST(follower.history().steps.back().step == 7);
  BOOST_CHECK_THROW(RunFollower((dir / "none").string()), cohort::IoError);
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(report_has_every_chart) {
  RunHistory h;
  h.dir = "run<1>";
  h.runs.push_back({{"event", "run"}, {"ranks", 2}, {"total_steps", 20}, {"hosts", {"a", "b"}}});
  for (int i = 1; i <= 20; ++i) h.add({{"event", "step"}, {"step", i}, {"loss", 1.0 / i}});
  Summary s;
  s.step = 20;
  s.ranks = 2;
  s.rank_busy = {0.01, 0.02};
  s.rank_step = {0.03, 0.03};
  h.summaries.push_back(s);
  h.add({{"event", "eval"}, {"step", 20}, {"loss", 0.5}, {"accuracy", 0.9}});
  h.add({{"event", "checkpoint_saved"}, {"step", 10}, {"path", "c/step-10"}});
  const std::string html = render_report(h, Thresholds{});
  for (const char* id : {"loss", "eval", "throughput", "breakdown", "comm", "ranks", "events"}) {
    BOOST_TEST(html.find(std::string("data-chart=\"") + id + "\"") != std::string::npos, id);
  }
  BOOST_TEST(html.find("run&lt;1&gt;") != std::string::npos);                // escaped
  BOOST_TEST(html.find("http") == html.find("http://www.w3.org/2000/svg"));  // nothing fetched
}

BOOST_AUTO_TEST_CASE(process_sampler_sees_cpu_time) {
  ProcessSampler sampler;
  spin(0.3);
  const auto s = sampler.sample();
  // Spinning, the thread's share is a whole core on a quiet machine and far less on a loaded one
  // (0.48 seen beside a build on 2 cores): the margin only separates "sees CPU time" from none.
  BOOST_TEST(s.cpu_util > 0.05);
  BOOST_TEST(s.cpu_util < 1.5);  // one thread spun
  BOOST_TEST(s.rss_bytes > 1e6);
}

BOOST_AUTO_TEST_CASE(nvml_index_follows_cuda_visible_devices) {
  BOOST_TEST(nvml_index(1, "") == 1);
  BOOST_TEST(nvml_index(1, "3,5") == 5);
  BOOST_TEST(nvml_index(0, "GPU-8f2a") == -1);  // a UUID: looked up by NVML
  GpuSampler none(-1);
  BOOST_TEST(!none.available());
  BOOST_TEST(none.why_not() == "no GPU in use");
  BOOST_TEST(!none.sample().available);
}

BOOST_AUTO_TEST_SUITE_END()
