#include "cohort/monitor/run_history.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/input.hpp"
#include "common/json_limits.hpp"

namespace cohort::monitor {
namespace {

// metrics.jsonl may have any size (it grows by a record per step); it is read in pieces.
constexpr std::int64_t kAnySize = std::numeric_limits<std::int64_t>::max();
constexpr std::uint64_t kChunkBytes = 16u << 20;

// Drops the records of `v` at or after `step` (a restart repeats them).
template <typename T>
void rewind(std::vector<T>& v, std::int64_t step) {
  while (!v.empty() && v.back().step >= step) v.pop_back();
}

std::string describe(const nlohmann::json& r) {
  for (const char* key : {"message", "path", "from", "signal", "reason"}) {
    if (r.contains(key) && r[key].is_string()) return r[key].get<std::string>();
  }
  return "";
}

}  // namespace

std::int64_t RunHistory::total_steps() const {
  return runs.empty() ? 0 : runs.back().value("total_steps", std::int64_t{0});
}

int RunHistory::ranks() const { return runs.empty() ? 0 : runs.back().value("ranks", 0); }

std::vector<std::string> RunHistory::hosts() const {
  if (runs.empty() || !runs.back().contains("hosts")) return {};
  return runs.back()["hosts"].get<std::vector<std::string>>();  // add() checked the type
}

namespace {

// The fields read outside add() (and the step every record sorts by) have the right type and
// range, so that a record written by hand or damaged is a bad line, not a crash later.
void check_record(const nlohmann::json& r) {
  COHORT_CHECK(r.is_object(), IoError, "not a JSON object");
  const auto integer_at_least = [&](const char* key, std::int64_t low) {
    if (!r.contains(key)) return;
    COHORT_CHECK(r[key].is_number_integer() && r[key].get<std::int64_t>() >= low, IoError,
                 "field '", key, "' is not an integer >= ", low);
  };
  // Every integer read from a record: nlohmann converts a float such as 3.7e21 to int64 with
  // undefined behaviour (UBSan under fuzz_metrics), so a non-integer is a bad line.
  for (const char* key : {"step", "total_steps", "restart", "samples", "steps", "first_step",
                          "window_steps", "slowest_rank"}) {
    integer_at_least(key, key == std::string("steps") ? -1 : 0);
  }
  if (r.contains("ranks")) {
    COHORT_CHECK(r["ranks"].is_number_integer() && r["ranks"].get<std::int64_t>() >= 1 &&
                     r["ranks"].get<std::int64_t>() <= (1 << 24),
                 IoError, "field 'ranks' is not a rank count");
  }
  for (const char* key : {"event", "job_id", "stop_reason", "message"}) {
    COHORT_CHECK(!r.contains(key) || r[key].is_string(), IoError, "field '", key,
                 "' is not a string");
  }
  if (r.contains("hosts")) {
    const auto& hosts = r["hosts"];
    COHORT_CHECK(hosts.is_array() && std::all_of(hosts.begin(), hosts.end(),
                                                 [](const auto& h) { return h.is_string(); }),
                 IoError, "field 'hosts' is not a list of names");
  }
}

}  // namespace

void RunHistory::add(const nlohmann::json& r) {
  check_record(r);
  const std::string kind = r.value("event", "");
  const double t = r.value("t", 0.0);
  if (kind == "step") {
    StepPoint p;
    p.step = r.at("step").get<std::int64_t>();
    rewind(steps, p.step);
    p.t = t;
    p.loss = r.value("loss", 0.0);
    p.lr = r.value("lr", 0.0);
    p.grad_norm = r.value("grad_norm", 0.0);
    p.timed = r.contains("step_s");
    p.seconds = r.value("step_s", 0.0);
    p.samples = r.value("samples", std::int64_t{0});
    for (int i = 0; i < kPhases; ++i) {
      p.phase[static_cast<std::size_t>(i)] = r.value(std::string(phase_name(i)) + "_s", 0.0);
    }
    steps.push_back(p);
    position = p.step;
  } else if (kind == "summary") {
    Summary s = summary_from_json(r);
    rewind(summaries, s.step);
    summaries.push_back(std::move(s));
  } else if (kind == "eval") {
    EvalPoint e{r.at("step").get<std::int64_t>(), r.value("loss", 0.0), r.value("accuracy", 0.0),
                r.value("perplexity", 0.0)};
    rewind(evals, e.step);
    evals.push_back(e);
  } else if (kind == "run") {
    runs.push_back(r);
    // A start resumes from its checkpoint's step (first_step; older logs: where the log was).
    position = r.value("first_step", position);
    if (r.value("restart", 0) > 0 || runs.size() > 1) {
      events.push_back({t, position, "restart",
                        "start " + std::to_string(runs.size()) + " (Slurm restart " +
                            std::to_string(r.value("restart", 0)) + ")",
                        position});
    }
  } else {
    if (kind == "end") end = r;
    const auto step = r.contains("step") && r["step"].is_number_integer()
                          ? r["step"].get<std::int64_t>()
                          : (r.contains("steps") ? r.value("steps", std::int64_t{-1}) : -1);
    events.push_back({t, step, kind, describe(r), step >= 0 ? step : position});
  }
}

RunFollower::RunFollower(std::string dir) : path_(dir + "/metrics.jsonl") {
  history_.dir = std::move(dir);
  std::error_code error;
  COHORT_CHECK(std::filesystem::exists(std::filesystem::symlink_status(path_, error)), IoError,
               path_, ": no such file (is this a run directory? train.run_dir)");
  io::InputFile::open(path_, kAnySize);  // a FIFO, a directory, a dangling link: said here
}

bool RunFollower::poll() {
  // Reopened at each poll (the file may be replaced), through the one way in: never a FIFO.
  const auto file = io::InputFile::open(path_, kAnySize);
  const auto size = static_cast<std::uint64_t>(file.size());
  if (size < offset_) {  // the file was replaced: start over
    const std::string dir = history_.dir;
    history_ = RunHistory();
    history_.dir = dir;
    offset_ = 0;
    in_long_line_ = false;
  }
  bool added = false;
  // In pieces of at most kChunkBytes: a long run's file is never held whole.
  std::string chunk;
  while (offset_ < size) {
    const std::uint64_t take = std::min<std::uint64_t>(size - offset_, kChunkBytes);
    chunk.resize(take);
    io::read_at(file.fd(), static_cast<std::int64_t>(offset_), chunk.data(), take, path_);
    if (in_long_line_) {  // the rest of a line longer than a piece: skipped to its end
      const std::size_t end = chunk.find('\n');
      offset_ += end == std::string::npos ? take : end + 1;
      in_long_line_ = end == std::string::npos;
      continue;
    }
    const std::size_t used = add_lines(chunk, added);
    if (used > 0) {
      offset_ += used;
      continue;
    }
    if (take < kChunkBytes) break;  // a torn last line waits for the next poll
    offset_ += take;                // a line longer than a piece: damaged, skipped whole
    ++history_.bad_lines;
    in_long_line_ = true;
  }
  return added;
}

std::size_t RunFollower::add_lines(const std::string& chunk, bool& added) {
  std::size_t start = 0;
  for (std::size_t nl; (nl = chunk.find('\n', start)) != std::string::npos; start = nl + 1) {
    const std::string line = chunk.substr(start, nl - start);
    if (line.empty()) continue;
    if (!json_limits::within_depth(line)) {
      ++history_.bad_lines;
      continue;
    }
    try {
      history_.add(nlohmann::json::parse(line));
      added = true;
    } catch (const nlohmann::json::exception&) {
      ++history_.bad_lines;  // not ours, or damaged: counted, shown, skipped
    } catch (const IoError&) {
      ++history_.bad_lines;  // well-formed JSON with a field out of range or of the wrong type
    }
  }
  return start;  // a torn last line waits for the next piece or poll
}

RunHistory load_run(const std::string& dir) {
  RunFollower follower(dir);
  follower.poll();
  return follower.history();
}

}  // namespace cohort::monitor
