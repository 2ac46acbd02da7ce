#include "watchdog.hpp"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "cohort/comm/communicator.hpp"
#include "cohort/comm/device.hpp"
#include "cohort/env/step_marker.hpp"
#include "cohort/error.hpp"

namespace cohort::comm {

Watchdog::Watchdog(std::function<void(int)> abort_job, std::chrono::milliseconds poll)
    : abort_job_(std::move(abort_job)), poll_(poll), thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::watch(std::weak_ptr<FlightRecorder> recorder, std::string describe, int rank,
                     int size) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back({std::move(recorder), std::move(describe), rank, size});
}

std::string Watchdog::timeout_message(const FlightRecord& r, const std::string& describe, int rank,
                                      int size, std::int64_t step) {
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
  const double limit = std::chrono::duration<double>(r.deadline - r.start).count();
  std::ostringstream out;
  out << "watchdog: rank " << rank << " of " << size << " (" << describe << "): " << r.op << " #"
      << r.seq << " (" << r.numel << " x " << r.dtype << ")";
  if (step >= 0) out << " at step " << step;
  out << " has not completed after " << waited << " s (timeout " << limit << " s); waiting for ";
  if (r.peer >= 0 && r.op != "broadcast") {
    out << "rank " << r.peer;
  } else if (r.op == "broadcast" && r.peer != rank) {
    out << "root rank " << r.peer;
  } else {
    out << "ranks";
    const char* sep = " ";
    for (int i = 0; i < size; ++i) {
      if (i == rank) continue;
      out << sep << i;
      sep = ",";
    }
  }
  out << " (one of them is missing, slow, or called something else)";
  return out.str();
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, poll_);
    if (stop_) break;
    // The probes query CUDA events: on the rank's device, never a context of their own on GPU 0.
    // Set at every wake because the rank's device may be chosen after this thread started.
    make_rank_device_current();
    const auto now = std::chrono::steady_clock::now();
    for (const auto& entry : entries_) {
      const auto recorder = entry.recorder.lock();
      if (!recorder) continue;
      // Every operation in flight is here, however many have started and ended since it did.
      for (const auto& [record, probe] : recorder->overdue(now)) {
        if (probe && probe()) continue;  // it had completed; nobody had asked yet
        fire(record, entry);             // does not return
      }
    }
  }
}

namespace {
std::mutex observer_mutex;
std::function<void(const std::string&)>& observer() {
  static std::function<void(const std::string&)> f;
  return f;
}
}  // namespace

void set_timeout_observer(std::function<void(const std::string&)> f) {
  std::lock_guard<std::mutex> lock(observer_mutex);
  observer() = std::move(f);
}

void Watchdog::fire(const FlightRecord& record, const Entry& entry) {
  std::string text =
      "cohort: " + timeout_message(record, entry.describe, entry.rank, entry.size, step_.load()) +
      "\n";
  for (const auto& e : entries_) {
    if (const auto recorder = e.recorder.lock()) {
      text += "cohort: flight recorder of rank " + std::to_string(e.rank) + " (" + e.describe +
              "), oldest first:\n" + recorder->dump();
    }
  }
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  {
    std::lock_guard<std::mutex> lock(observer_mutex);
    if (observer()) {
      observer()(timeout_message(record, entry.describe, entry.rank, entry.size, step_.load()));
    }
  }
  env::mark_step_failed(static_cast<int>(ExitCode::kWatchdog));  // supervise ends the step now
  abort_job_(static_cast<int>(ExitCode::kWatchdog));
  std::_Exit(static_cast<int>(ExitCode::kWatchdog));  // if the abort returned
}

}  // namespace cohort::comm
