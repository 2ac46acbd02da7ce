// Watchdog: one thread per process tree of communicators (the root and its splits share it) that
// wakes every few tens of milliseconds, looks for an operation in flight past its deadline in any
// registered flight recorder, and then logs it, dumps the recorders and aborts the job (exit 76).
// Blocking MPI and NCCL calls cannot be interrupted, so aborting is the only way never to hang.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cohort/comm/flight_recorder.hpp"

namespace cohort::comm {

class Watchdog {
 public:
  // `abort_job` must end the whole job with the given exit code (MPI_Abort, ncclCommAbort...).
  explicit Watchdog(std::function<void(int)> abort_job,
                    std::chrono::milliseconds poll = std::chrono::milliseconds(50));
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // `describe` names the communicator; `peers` lists the ranks an operation waits for.
  void watch(std::weak_ptr<FlightRecorder> recorder, std::string describe, int rank, int size);
  void set_step(std::int64_t step) { step_.store(step); }

  // The message for an overdue record (exposed for tests).
  static std::string timeout_message(const FlightRecord& record, const std::string& describe,
                                     int rank, int size, std::int64_t step);

 private:
  struct Entry {
    std::weak_ptr<FlightRecorder> recorder;
    std::string describe;
    int rank;
    int size;
  };
  void loop();
  void fire(const FlightRecord& record, const Entry& entry);

  std::function<void(int)> abort_job_;
  std::chrono::milliseconds poll_;
  std::atomic<std::int64_t> step_{-1};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::vector<Entry> entries_;
  std::thread thread_;
};

}  // namespace cohort::comm
